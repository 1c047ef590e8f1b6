package tape

import (
	"encoding/json"
	"strconv"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// AddInjections fills in st.Injected from the messages of x that carry
// _meta.injected (only those are read again), counting per rule.
func AddInjections(st *Stats, x *Index) {
	x.mu.RLock()
	n := x.injected
	x.mu.RUnlock()
	if n == 0 {
		return
	}
	st.Injected = map[string]int{}
	for i := range x.Len() {
		if !x.Entry(i).Injected {
			continue
		}
		e, err := x.Message(i)
		if err != nil {
			continue
		}
		for _, in := range Injections(e.Raw) {
			name := in.Rule
			if in.Audit {
				name += " (audit: not done)"
			}
			st.Injected[name]++
		}
	}
}

// Injection is one entry of a record's _meta.injected: what an
// interception rule did to the message (see rules.Injection, which writes
// them).
//
// Encode one with AppendInjections, which writes Original as it is.
type Injection struct {
	Rule     string          `json:"rule"`
	Action   string          `json:"action"`
	Audit    bool            `json:"audit,omitempty"`
	Original json.RawMessage `json:"original,omitempty"` // the message before a change, as it was
	Injected bool            `json:"injected,omitempty"`
	Dropped  bool            `json:"dropped,omitempty"`
	DelayMS  int64           `json:"delay_ms,omitempty"`
	Note     string          `json:"note,omitempty"`
}

// Injections reads a record's _meta.injected (or its _tapedeck
// counterpart), or nil.
func Injections(raw []byte) []Injection {
	var m struct {
		Meta struct {
			Injected []Injection `json:"injected"`
		} `json:"_meta"`
		Alt struct {
			Injected []Injection `json:"injected"`
		} `json:"_tapedeck"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	if len(m.Alt.Injected) > 0 {
		return m.Alt.Injected
	}
	return m.Meta.Injected
}

// AppendInjections appends injections as a JSON array; Original goes in
// as it is (it is the JSON of a message), the rest as json.Marshal would
// write it.
func AppendInjections(b []byte, in []Injection) []byte {
	b = append(b, '[')
	for i, x := range in {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"rule":`...)
		b = jsonscan.AppendQuoted(b, x.Rule, false)
		b = append(b, `,"action":`...)
		b = jsonscan.AppendQuoted(b, x.Action, false)
		if x.Audit {
			b = append(b, `,"audit":true`...)
		}
		if len(x.Original) > 0 {
			b = append(append(b, `,"original":`...), x.Original...)
		}
		if x.Injected {
			b = append(b, `,"injected":true`...)
		}
		if x.Dropped {
			b = append(b, `,"dropped":true`...)
		}
		if x.DelayMS != 0 {
			b = strconv.AppendInt(append(b, `,"delay_ms":`...), x.DelayMS, 10)
		}
		if x.Note != "" {
			b = append(b, `,"note":`...)
			b = jsonscan.AppendQuoted(b, x.Note, false)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
