package replay

// Gate holds the outputs that replay recorded messages until the
// debugger's playback lets those messages through (Release), so that a
// breakpoint holds a live client's answers; what the engine makes itself
// (Output.Seq < 0: divergence errors, pings) is never held. Both edges of
// "tapedeck debug" gate through it: HTTPHandler (HTTPOptions.Gated) and
// the stdio path of debug/serve. T is what an edge keeps with a held
// output. A Gate is guarded by its edge's lock; its zero value lets
// nothing recorded through.
type Gate[T any] struct {
	released int // tape messages before it are let through
	held     []gated[T]
}

type gated[T any] struct {
	seq int
	v   T
}

// Pass reports whether an output replaying tape message seq (-1 for one the
// engine made) may go out now.
func (g *Gate[T]) Pass(seq int) bool { return seq < g.released }

// Hold keeps v, an output replaying tape message seq, until Release lets
// seq through.
func (g *Gate[T]) Hold(seq int, v T) { g.held = append(g.held, gated[T]{seq, v}) }

// Release lets the tape messages before upTo through (it never takes back
// what it let through) and returns the held values now due, in the order
// they were held.
func (g *Gate[T]) Release(upTo int) []T {
	g.released = max(g.released, upTo)
	var due []T
	rest := g.held[:0]
	for _, h := range g.held {
		if h.seq < g.released {
			due = append(due, h.v)
		} else {
			rest = append(rest, h)
		}
	}
	clear(g.held[len(rest):])
	g.held = rest
	return due
}

// Drop forgets the values held and returns how many there were; what was
// let through stays let through.
func (g *Gate[T]) Drop() int {
	n := len(g.held)
	clear(g.held)
	g.held = g.held[:0]
	return n
}
