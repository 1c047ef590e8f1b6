package tape

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// ListCost is what a server's definitions cost a model's context: the
// last answer to one list method, in bytes and in approximate tokens.
type ListCost struct {
	Method string `json:"method"` // tools/list, prompts/list, resources/list, resources/templates/list
	Items  int    `json:"items"`
	Bytes  int    `json:"bytes"` // the result as recorded
	// ApproxTokens is Bytes/4, the usual rule of thumb for JSON and English
	// text; a real tokenizer gives another figure.
	ApproxTokens int `json:"approx_tokens"`
	Seq          int `json:"seq"` // the answer measured
}

// AddContextCosts fills in each server's Context: the size of the last
// answer to each list method it was asked (all pages of a paginated list
// are not summed: the last page is measured).
func AddContextCosts(st *Stats, x *Index) {
	last := map[string]map[string]int{} // server → method → seq
	x.mu.RLock()
	for i := range x.recs.len() { // the records themselves, under one lock: this runs for every message
		r := x.recs.at(i)
		if r.kind != KindResponse || dirCodes[r.dir] != DirRecv || r.flags&flagError != 0 {
			continue
		}
		if l, ok := ListOf(x.methods.names[r.method]); ok {
			server := x.servers.names[r.server]
			if last[server] == nil {
				last[server] = map[string]int{}
			}
			last[server][l.Method] = i
		}
	}
	x.mu.RUnlock()
	for si := range st.Servers {
		ss := &st.Servers[si]
		for _, l := range Lists() {
			seq, ok := last[ss.Server][l.Method]
			if !ok {
				continue
			}
			msg, err := x.Message(seq)
			if err != nil {
				continue
			}
			res := gjson.GetBytes(msg.Raw, "result")
			c := ListCost{Method: l.Method, Items: len(res.Get(l.Member).Array()), Bytes: len(res.Raw), Seq: seq}
			c.ApproxTokens = (c.Bytes + 3) / 4
			ss.Context = append(ss.Context, c)
		}
	}
}

// String reads "tools/list: 14 items, 12.3 KB, ≈3.1k tokens".
func (c ListCost) String() string {
	return fmt.Sprintf("%s: %d items, %s, ≈%s tokens", c.Method, c.Items, kb(c.Bytes), approx(c.ApproxTokens))
}

func kb(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}

func approx(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}
