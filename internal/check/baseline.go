package check

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// Baseline fingerprints every server's tools, prompts, resources and
// resource templates as a tape last listed them: each definition in
// canonical JSON (names, descriptions, input and output schemas,
// annotations), so that a changed description or schema is drift.
type Baseline struct {
	Version int `json:"version"`
	// Servers maps a server to its kinds (tools, prompts, resources,
	// resourceTemplates) to the definitions by name (or URI).
	Servers map[string]map[string]map[string]json.RawMessage `json:"servers"`
}

// where is where a definition was listed on a tape.
type where struct{ seq, line int }

// definitions reads the last listing of each kind of each server of x.
func definitions(x *tape.Index) (map[string]map[string]map[string]json.RawMessage, map[string]where) {
	out := map[string]map[string]map[string]json.RawMessage{}
	at := map[string]where{} // server + kind → the listing's place
	for i := range x.Len() {
		e := x.Entry(i)
		if e.Kind != tape.KindResponse || e.Dir != tape.DirRecv || e.Error {
			continue
		}
		if l, ok := tape.ListOf(x.MethodOf(i)); ok {
			m, err := x.Message(i)
			if err != nil {
				continue
			}
			defs := listed(m.Raw, l)
			if out[e.Server] == nil {
				out[e.Server] = map[string]map[string]json.RawMessage{}
			}
			out[e.Server][l.Member] = defs
			at[e.Server+"\x00"+l.Member] = where{i, e.Line}
		}
	}
	return out, at
}

// listed returns the definitions an answer to list l holds, in canonical
// JSON, by name (or URI).
func listed(answer []byte, l tape.List) map[string]json.RawMessage {
	defs := map[string]json.RawMessage{}
	for _, it := range gjson.GetBytes(answer, "result."+l.Member).Array() {
		if c, err := tape.Canonical([]byte(it.Raw)); err == nil {
			defs[it.Get(l.Key).String()] = c
		}
	}
	return defs
}

// NewBaseline fingerprints the definitions tape x last listed.
func NewBaseline(x *tape.Index) Baseline {
	defs, _ := definitions(x)
	return Baseline{Version: 1, Servers: defs}
}

// Write writes the baseline as indented JSON, keys sorted.
func (b Baseline) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(b)
}

// ReadBaseline reads a baseline written by Write.
func ReadBaseline(r io.Reader) (*Baseline, error) {
	var b Baseline
	dec := json.NewDecoder(r)
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("baseline: expected the JSON tapedeck baseline save writes: %w", err)
	}
	if b.Version != 1 || b.Servers == nil {
		return nil, fmt.Errorf("baseline: expected version 1 with servers, found version %d", b.Version)
	}
	return &b, nil
}

// DriftItem is one definition that is not as in the baseline.
type DriftItem struct {
	Server, Kind, Name string
	// Baseline is the baseline's server the tape's Server was compared
	// with, when its name is another (--baseline-server).
	Baseline  string
	Change    string // added, removed, changed
	Diff      []replay.DiffOp
	Seq, Line int // the listing on the tape
}

func (d DriftItem) String() string {
	kind := strings.TrimSuffix(d.Kind, "s")
	server := d.Server
	if d.Baseline != "" && d.Baseline != d.Server {
		server += ", baseline server " + d.Baseline
	}
	s := fmt.Sprintf("%s %s %s (server %s)", kind, d.Name, d.Change, server)
	if len(d.Diff) > 0 {
		var parts []string
		for _, op := range d.Diff {
			parts = append(parts, op.String())
		}
		s += ": " + strings.Join(parts, "; ")
	}
	return s
}

// ServerNames returns the baseline's servers, sorted.
func (b Baseline) ServerNames() []string {
	names := make([]string, 0, len(b.Servers))
	for s := range b.Servers {
		names = append(names, s)
	}
	sort.Strings(names)
	return names
}

// Drift compares the definitions tape x last listed with the baseline's:
// for each server of the tape the baseline has, and each kind both
// listed, what was added, removed or changed, field by field. as maps a
// tape's server to the baseline's server it is compared with; a server
// not in it is compared with the baseline's server of its own name.
func (b Baseline) Drift(x *tape.Index, as map[string]string) []DriftItem {
	now, at := definitions(x)
	var pairs []serverPair
	for s := range now {
		base := s
		if n, ok := as[s]; ok {
			base = n
		}
		pairs = append(pairs, serverPair{tape: s, base: base})
	}
	return b.drift(pairs, now, at)
}

// DriftOfAnswers compares the definitions in a live server's answers to
// list requests (method → the answer as it came) with the baseline's for
// server: verify --baseline.
func (b Baseline) DriftOfAnswers(server string, answers map[string][]byte) []DriftItem {
	now := map[string]map[string]map[string]json.RawMessage{server: {}}
	for _, l := range tape.Lists() {
		raw, ok := answers[l.Method]
		if !ok {
			continue
		}
		now[server][l.Member] = listed(raw, l)
	}
	return b.drift([]serverPair{{server, server}}, now, map[string]where{})
}

// serverPair is a tape's server and the baseline's server it is compared
// with.
type serverPair struct{ tape, base string }

func (b Baseline) drift(pairs []serverPair, now map[string]map[string]map[string]json.RawMessage, at map[string]where) []DriftItem {
	var out []DriftItem
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].base != pairs[j].base {
			return pairs[i].base < pairs[j].base
		}
		return pairs[i].tape < pairs[j].tape
	})
	for _, p := range pairs {
		s := p.tape
		for _, l := range tape.Lists() {
			was, ok1 := b.Servers[p.base][l.Member]
			is, ok2 := now[s][l.Member]
			if !ok1 || !ok2 {
				continue // not listed on one side: nothing to compare
			}
			w := at[s+"\x00"+l.Member]
			names := map[string]bool{}
			for n := range was {
				names[n] = true
			}
			for n := range is {
				names[n] = true
			}
			var sorted []string
			for n := range names {
				sorted = append(sorted, n)
			}
			slices.Sort(sorted)
			for _, n := range sorted {
				a, inA := was[n]
				c, inC := is[n]
				d := DriftItem{Server: s, Baseline: p.base, Kind: l.Member, Name: n, Seq: w.seq, Line: w.line}
				switch {
				case !inC:
					d.Change = "removed"
				case !inA:
					d.Change = "added"
				default:
					va, err1 := tape.Decode(a)
					vc, err2 := tape.Decode(c)
					if err1 != nil || err2 != nil {
						continue
					}
					ops := replay.Diff(va, vc)
					if len(ops) == 0 {
						continue
					}
					d.Change, d.Diff = "changed", ops
				}
				out = append(out, d)
			}
		}
	}
	return out
}
