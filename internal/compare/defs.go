package compare

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// handshake compares the two sessions' last initialize answers of server
// sa of A and sb of B: the protocol version, the server's identity and its capabilities.
func handshake(sr *ServerReport, xa, xb *answers, sa, sb string) {
	ra, rb := xa.last(sa, "initialize"), xb.last(sb, "initialize")
	if ra == nil || rb == nil {
		return
	}
	if va, vb := gjson.GetBytes(ra, "result.protocolVersion").String(), gjson.GetBytes(rb, "result.protocolVersion").String(); va != vb {
		sr.Protocol = &Change{What: "protocol version", A: va, B: vb}
	}
	info := func(r []byte) string {
		return strings.TrimSpace(gjson.GetBytes(r, "result.serverInfo.name").String() + " " + gjson.GetBytes(r, "result.serverInfo.version").String())
	}
	if ia, ib := info(ra), info(rb); ia != ib {
		sr.ServerInfo = &Change{What: "server", A: ia, B: ib}
	}
	ca, cb := gjson.GetBytes(ra, "result.capabilities"), gjson.GetBytes(rb, "result.capabilities")
	keys := map[string]bool{}
	for _, c := range []gjson.Result{ca, cb} {
		c.ForEach(func(k, _ gjson.Result) bool { keys[k.String()] = true; return true })
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		a, b := ca.Get(gjson.Escape(k)), cb.Get(gjson.Escape(k))
		if !tape.EqualJSON([]byte(orNull(a.Raw)), []byte(orNull(b.Raw))) {
			sr.Caps = append(sr.Caps, Change{What: k, A: absent(a), B: absent(b)})
		}
	}
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

func absent(r gjson.Result) string {
	if !r.Exists() {
		return "(absent)"
	}
	return strings.Join(strings.Fields(r.Raw), " ")
}

// answers are the last answers of a tape's servers to the methods a
// comparison reads (initialize, server/discover, the list methods), found
// for each server in one walk of the index back from its end, which stops
// once it has them all, rather than in a walk a method.
type answers struct {
	x    *tape.Index
	seqs map[string]map[string]int // server → method → the seq of its last answer
}

func newAnswers(x *tape.Index) *answers {
	return &answers{x: x, seqs: map[string]map[string]int{}}
}

// answered reports whether answers keeps the last answers to method.
func answered(method string) bool {
	if method == "initialize" || method == tape.MethodDiscover {
		return true
	}
	_, ok := tape.ListOf(method)
	return ok
}

// last is lastAnswer(x, s, method). calls, reading every message of the
// tape, fills a server's in on the way.
func (a *answers) last(s, method string) []byte {
	if !answered(method) {
		return lastAnswer(a.x, s, method)
	}
	seqs, ok := a.seqs[s]
	if !ok {
		seqs = map[string]int{}
		wanted := 2 + len(tape.Lists())
		for i := a.x.Len() - 1; i >= 0 && len(seqs) < wanted; i-- {
			e := a.x.Entry(i)
			if e.Server != s || e.Kind != tape.KindResponse || e.Dir != tape.DirRecv {
				continue
			}
			if m := a.x.MethodOf(i); answered(m) {
				if _, seen := seqs[m]; !seen {
					seqs[m] = i
				}
			}
		}
		a.seqs[s] = seqs
	}
	i, ok := seqs[method]
	if !ok {
		return nil
	}
	m, err := a.x.Message(i)
	if err != nil {
		return nil
	}
	return tape.StripMeta(m.Raw)
}

// lastAnswer returns the body of the last answer to a method of server s.
func lastAnswer(x *tape.Index, s, method string) []byte {
	for i := x.Len() - 1; i >= 0; i-- {
		e := x.Entry(i)
		if e.Server != s || e.Kind != tape.KindResponse || e.Dir != tape.DirRecv {
			continue
		}
		if x.MethodOf(i) != method {
			continue
		}
		m, err := x.Message(i)
		if err != nil {
			return nil
		}
		return tape.StripMeta(m.Raw)
	}
	return nil
}

// definitions compares the tools, prompts, resources and resource
// templates the two sessions last listed for server sa of A and sb of B: the "rug pull" a
// server can do between runs (a description or an input schema changed).
func definitions(xa, xb *answers, sa, sb string, n *tape.Normalizer) []Definition {
	var out []Definition
	for _, l := range tape.Lists() {
		ra, rb := xa.last(sa, l.Method), xb.last(sb, l.Method)
		if ra == nil || rb == nil {
			continue
		}
		items := func(r []byte) (map[string]string, []string) {
			m := map[string]string{}
			var order []string
			for _, it := range gjson.GetBytes(r, "result."+l.Member).Array() {
				k := it.Get(l.Key).String()
				m[k] = it.Raw
				order = append(order, k)
			}
			return m, order
		}
		ma, oa := items(ra)
		mb, ob := items(rb)
		for _, k := range oa {
			b, ok := mb[k]
			if !ok {
				out = append(out, Definition{Kind: l.Kind, Name: k, Change: "removed"})
				continue
			}
			va, err1 := tape.Decode([]byte(ma[k]))
			vb, err2 := tape.Decode([]byte(b))
			if err1 != nil || err2 != nil {
				continue
			}
			if ops := tape.Diff(va, vb); len(ops) > 0 {
				out = append(out, Definition{Kind: l.Kind, Name: k, Change: "changed", Diff: ops})
			}
		}
		for _, k := range ob {
			if _, ok := ma[k]; !ok {
				out = append(out, Definition{Kind: l.Kind, Name: k, Change: "added"})
			}
		}
	}
	return out
}
