package tape

import "github.com/tidwall/gjson"

// Episode is one recorder run's stretch of a tape for one server: from a
// $transport/start of the server to the next one, [Lo, Hi) in sequence
// numbers. A client that starts the server command more than once (the
// 2026-07-28 TypeScript client starts it once for its server/discover
// probe, kills it, and starts it again for the session) leaves one episode
// a start. A $transport/start with "episode": "new" (replay --fallback,
// vcr) continues the episode before it: the live exchanges it brings
// complete that session.
type Episode struct {
	Lo, Hi int
	// First is the episode's first client request (seq), or -1.
	First int
	// ProbeOnly: every client request of the episode is a server/discover
	// probe, and there is at least one.
	ProbeOnly bool
}

// Episodes splits x's records of server into episodes, in tape order.
// Records before the server's first $transport/start belong to the first
// episode; a tape with no start record is one episode.
func Episodes(x *Index, server string) []Episode {
	var out []Episode
	cur := Episode{First: -1}
	requests, probes, wire := 0, 0, false
	closeCur := func(hi int) {
		cur.Hi = hi
		cur.ProbeOnly = requests > 0 && requests == probes
		out = append(out, cur)
	}
	for i := range x.Len() {
		e := x.Entry(i)
		if e.Server != server {
			continue
		}
		if e.Kind == KindLifecycle && e.Method == MethodStart && !continues(x, i) {
			// A start opens an episode, unless nothing of the server came
			// before it (the tape's first record).
			if wire || len(out) > 0 {
				closeCur(i)
				cur, requests, probes, wire = Episode{Lo: i, First: -1}, 0, 0, false
			}
			continue
		}
		wire = wire || e.IsWire()
		if e.Kind == KindRequest && e.Dir == DirSend {
			requests++
			if e.Method == MethodDiscover {
				probes++
			}
			if cur.First < 0 {
				cur.First = i
			}
		}
	}
	closeCur(x.Len())
	return out
}

// continues reports whether start record i opens a continuation
// ("episode": "new") rather than a recorder run of its own.
func continues(x *Index, i int) bool {
	m, err := x.Message(i)
	if err != nil {
		return false
	}
	return gjson.GetBytes(m.Raw, "params.episode").String() == "new"
}
