package compare

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Shadow compares each server of one tape with its shadow lane (record
// --shadow: tape.ShadowServer), by the rules of Compare: A is the
// server's calls, B the lane's. Only A's calls the lane copied count (a
// call sampled out, or dropped before it reached B, is no difference):
// each lane request's _meta.shadowOf and shadowSession name the client's
// request it copies. A call B never answered is a status difference
// (pending). The report names each server A and its lane B.
func Shadow(side Side, o Options) (Report, error) {
	r := Report{A: side.Name, B: side.Name}
	x := side.Index
	servers := x.Servers()
	n := &tape.Normalizer{Ignore: o.Ignore}
	found := false
	for _, s := range servers {
		lane := tape.ShadowServer(s)
		if !slices.Contains(servers, lane) || o.Server != "" && o.Server != s && o.Server != lane {
			continue
		}
		found = true
		copied, err := shadowCopies(x, lane)
		if err != nil {
			return r, fmt.Errorf("%s: %w", side.Name, err)
		}
		seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		ca, err := calls(side, s, n, seeds, func(seq int) bool {
			// The session is tape metadata: the recorded line has it.
			m, err := x.Message(seq)
			if err != nil {
				return false
			}
			return copied[shadowKey(tape.ParseHTTPMeta(m.Raw).Session, string(m.ID))]
		}, nil)
		if err != nil {
			return r, fmt.Errorf("%s: %w", side.Name, err)
		}
		cb, err := calls(side, lane, n, seeds, nil, nil)
		if err != nil {
			return r, fmt.Errorf("%s: %w", side.Name, err)
		}
		sr := ServerReport{Server: s, ServerB: lane, CallsA: len(ca), CallsB: len(cb)}
		ans := newAnswers(x)
		handshake(&sr, ans, ans, s, lane)
		sr.Definitions = definitions(ans, ans, s, lane, n)
		sr.Calls, sr.Matched, sr.Aligned = alignCalls(ca, cb, x, x, n, o, seeds[0])
		r.Servers = append(r.Servers, sr)
	}
	if !found {
		if o.Server != "" {
			return r, fmt.Errorf("server %q has no shadow lane on the tape (record --shadow or --shadow-cmd writes one)", o.Server)
		}
		return r, fmt.Errorf("the tape has no shadow lane: expected a server named NAME%s (record --shadow or --shadow-cmd writes one)", tape.ShadowSuffix)
	}
	return r, nil
}

func shadowKey(session, id string) string { return session + "\x00" + id }

// shadowCopies reads which client requests the lane copied: their
// session and id, from each lane request's _meta.
func shadowCopies(x *tape.Index, lane string) (map[string]bool, error) {
	out := map[string]bool{}
	for i := range x.Len() {
		e := x.Entry(i)
		if e.Server != lane || e.Kind != tape.KindRequest || e.Dir != tape.DirSend {
			continue
		}
		m, err := x.Message(i)
		if err != nil {
			return nil, err
		}
		meta := tape.RecordMeta(m.Raw)
		of := gjson.GetBytes(meta, tape.MetaShadowOf)
		if !of.Exists() {
			continue // the lane's own answer to B's request has none
		}
		out[shadowKey(gjson.GetBytes(meta, tape.MetaShadowSession).String(), of.Raw)] = true
	}
	return out, nil
}
