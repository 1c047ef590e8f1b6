package tape

import "encoding/json"

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
			st.Injected[in.Rule]++
		}
	}
}

// Injection is one entry of a record's _meta.injected: what an
// interception rule did to the message (see rules.Injection, which writes
// them).
type Injection struct {
	Rule     string `json:"rule"`
	Action   string `json:"action"`
	Audit    bool   `json:"audit,omitempty"`
	Original string `json:"original,omitempty"`
	Injected bool   `json:"injected,omitempty"`
	Dropped  bool   `json:"dropped,omitempty"`
	DelayMS  int64  `json:"delay_ms,omitempty"`
	Note     string `json:"note,omitempty"`
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
