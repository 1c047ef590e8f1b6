package tui

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

// Filter selects messages. A query is space-separated terms, all of which
// must hold (see FilterHelp for the grammar): a field term field:V1,V2
// holds when any of its values matches; ! (or - before a field term)
// negates a term; any other word is free text, searched in the raw message
// (case-insensitive).
type Filter struct {
	Query string
	terms []term
}

// term is one condition of a filter.
type term struct {
	not    bool
	field  string // "" for free text
	values []string
	dirs   []tape.Dir
	text   []byte // free text, lower case
}

// filterFields are the field names a term may use.
var filterFields = map[string]bool{"method": true, "tool": true, "dir": true, "server": true, "status": true, "kind": true, "id": true}

// Values of status: and kind:.
var (
	filterStatuses = []string{"error", "ok", "tool-error", "rpc-error", "negotiation", "pending", "cancelled", "orphan", "late", "invalid"}
	filterKinds    = []string{"request", "response", "notification", "lifecycle", "invalid"}
)

// FilterHelp is the filter's grammar, for open --help.
const FilterHelp = `method:M       the method (a substring; a response's is its request's)
tool:T         the tool, prompt or resource a call names (exact)
dir:send|recv|lifecycle
server:S       the server (exact)
kind:request|response|notification|lifecycle|invalid
status:error|ok|tool-error|rpc-error|negotiation|pending|cancelled|orphan|late|invalid
               error is any failure: a JSON-RPC error, a tool error, an
               orphan answer or a damaged line
id:ID          the JSON-RPC id (3 or "abc")
WORD           free text in the raw message (case-insensitive)
F:A,B          any of A or B (method:tools/call,resources/read)
!TERM, -F:V    not (!dir:lifecycle, -kind:notification, !timeout)`

// ParseFilter parses a query.
func ParseFilter(q string) (Filter, error) {
	f := Filter{Query: strings.TrimSpace(q)}
	for _, word := range strings.Fields(q) {
		t, err := parseTerm(word)
		if err != nil {
			return f, err
		}
		f.terms = append(f.terms, t)
	}
	return f, nil
}

func parseTerm(word string) (term, error) {
	var t term
	w := word
	if strings.HasPrefix(w, "!") && len(w) > 1 {
		t.not, w = true, w[1:]
	} else if k, _, ok := strings.Cut(w[1:], ":"); ok && strings.HasPrefix(w, "-") && filterFields[strings.ToLower(k)] {
		t.not, w = true, w[1:] // "-32601" stays text: only a field term negates with -
	}
	k, v, ok := strings.Cut(w, ":")
	k = strings.ToLower(k)
	if !ok || v == "" || !filterFields[k] {
		// "a:b" that is not a known field is free text (e.g. a URI).
		t.text = bytes.ToLower([]byte(w))
		return t, nil
	}
	t.field = k
	for _, val := range strings.Split(v, ",") {
		if val == "" {
			continue
		}
		switch k {
		case "dir":
			switch strings.ToLower(val) {
			case "send", "→", "out":
				t.dirs = append(t.dirs, tape.DirSend)
			case "recv", "←", "in":
				t.dirs = append(t.dirs, tape.DirRecv)
			case "lifecycle":
				t.dirs = append(t.dirs, tape.DirLifecycle)
			default:
				return t, fmt.Errorf("filter %q: dir %q is not send, recv or lifecycle", word, val)
			}
		case "status":
			if val = strings.ToLower(val); !slices.Contains(filterStatuses, val) {
				return t, fmt.Errorf("filter %q: status %q is not one of %s", word, val, strings.Join(filterStatuses, ", "))
			}
		case "kind":
			if val = strings.ToLower(val); !slices.Contains(filterKinds, val) {
				return t, fmt.Errorf("filter %q: kind %q is not one of %s", word, val, strings.Join(filterKinds, ", "))
			}
		}
		t.values = append(t.values, val)
	}
	if len(t.values) == 0 && len(t.dirs) == 0 {
		return t, fmt.Errorf("filter %q: expected a value after %s:", word, k)
	}
	return t, nil
}

// Empty reports whether the filter matches everything.
func (f Filter) Empty() bool { return f.Query == "" }

// needsBody reports whether matching reads message bodies.
func (f Filter) needsBody() bool {
	for _, t := range f.terms {
		if t.field == "" || t.field == "tool" || t.field == "id" {
			return true
		}
	}
	return false
}

// Highlights returns what the detail pane marks in a matching message:
// the free-text words and the tool names the filter asks for (not what it
// negates).
func (f Filter) Highlights() []string {
	var out []string
	for _, t := range f.terms {
		switch {
		case t.not:
		case t.field == "":
			out = append(out, string(t.text))
		case t.field == "tool", t.field == "method":
			out = append(out, t.values...)
		}
	}
	return out
}

// message is what a term reads of one message, the body only when asked.
type message struct {
	x      *tape.Index
	i      int
	e      tape.Entry
	p      tape.Pair
	method string
	full   *tape.Entry
	err    error
}

func (m *message) body() *tape.Entry {
	if m.full == nil && m.err == nil {
		e, err := m.x.Message(m.i)
		m.full, m.err = &e, err
	}
	if m.err != nil {
		return nil
	}
	return m.full
}

// Match reports whether message i of x matches.
func (f Filter) Match(x *tape.Index, i int) bool {
	m := message{x: x, i: i, e: x.Entry(i), p: x.Pair(i)}
	m.method = m.e.Method
	if m.e.Kind == tape.KindResponse {
		m.method = m.p.Method
	}
	// Terms on what the index holds first: most messages fail one of
	// them without a read of their body.
	for pass := 0; pass < 2; pass++ {
		for _, t := range f.terms {
			body := t.field == "" || t.field == "tool" || t.field == "id"
			if body != (pass == 1) {
				continue
			}
			if t.holds(&m) == t.not {
				return false
			}
		}
	}
	return true
}

// holds reports whether the term, not negated, holds for m.
func (t term) holds(m *message) bool {
	e, p := m.e, m.p
	switch t.field {
	case "":
		b := m.body()
		return b != nil && bytes.Contains(bytes.ToLower(b.Raw), t.text)
	case "method":
		return slices.ContainsFunc(t.values, func(v string) bool { return strings.Contains(m.method, v) })
	case "dir":
		return slices.Contains(t.dirs, e.Dir)
	case "server":
		return slices.Contains(t.values, e.Server)
	case "status":
		return slices.ContainsFunc(t.values, func(v string) bool { return statusIs(e, p, v) })
	case "kind":
		return slices.ContainsFunc(t.values, func(v string) bool { return e.Kind.String() == v })
	case "id":
		b := m.body()
		return b != nil && slices.ContainsFunc(t.values, func(v string) bool { return string(b.ID) == v || string(b.ID) == fmt.Sprintf("%q", v) })
	case "tool":
		name := ""
		switch {
		case e.Kind == tape.KindRequest:
			if b := m.body(); b != nil {
				name = tape.Target(e.Method, b.Raw)
			}
		case e.Kind == tape.KindResponse && p.Partner >= 0:
			name = callName(m.x, p.Partner, p.Method)
		}
		return slices.Contains(t.values, name)
	}
	return false
}

func statusIs(e tape.Entry, p tape.Pair, st string) bool {
	switch st {
	case "error": // any failure: a JSON-RPC error, a tool's, an orphan or invalid line
		return e.Failed() != tape.NoFailure || e.Kind == tape.KindInvalid || p.Orphan
	case "tool-error":
		return e.Failed() == tape.ToolError
	case "rpc-error":
		return e.Failed() == tape.RPCError
	case "ok":
		return e.Kind == tape.KindResponse && e.Failed() == tape.NoFailure && !p.Orphan && !e.Negotiation
	case "negotiation": // a rejected server/discover probe and its answer
		return e.Negotiation
	case "pending":
		return p.Pending
	case "orphan":
		return p.Orphan
	case "cancelled":
		return p.Cancelled
	case "late":
		return p.Late
	case "invalid":
		return e.Kind == tape.KindInvalid
	}
	return false
}

// hasStatus reports whether the filter looks at pairing status, which can
// change for a message already on the tape when more are appended.
func (f Filter) hasStatus() bool {
	return slices.ContainsFunc(f.terms, func(t term) bool { return t.field == "status" })
}

// matchAll returns the sorted seqs of x that f matches, from 0 to n, and
// the rows whose match may still change as the tape grows (see matchGrow).
// It checks stop every few thousand messages so a newer query can stop it;
// it returns nil matches when stopped.
func matchAll(x *tape.Index, f Filter, n int, stop func() bool) (matches, watch []int) {
	matches = []int{}
	for i := range n {
		if i%4096 == 0 && stop != nil && stop() {
			return nil, nil
		}
		if f.Match(x, i) {
			matches = append(matches, i)
		}
		if f.hasStatus() && x.Pair(i).Pending {
			watch = append(watch, i)
		}
	}
	return matches, watch
}

// matchGrow extends matches, f's matches of x's first from messages, to
// the first n, looking only at what may have changed: the new messages;
// the earlier partners of new messages (a response pairs with its request,
// so a pending request is answered, an orphan response finds its request
// and its method); and, when f looks at status, the requests that were
// pending (watch), which a cancellation can change. It returns the new
// matches and watch list, or nil matches when stopped.
func matchGrow(x *tape.Index, f Filter, matches []int, from, n int, watch []int, stop func() bool) ([]int, []int) {
	recheck := map[int]bool{}
	for _, i := range watch {
		recheck[i] = true
	}
	for i := from; i < n; i++ {
		if p := x.Pair(i).Partner; p >= 0 && p < from {
			recheck[p] = true
		}
	}
	var again, newWatch []int
	for i := range recheck {
		if f.Match(x, i) {
			again = append(again, i)
		}
		if f.hasStatus() && x.Pair(i).Pending {
			newWatch = append(newWatch, i)
		}
	}
	slices.Sort(again)
	// Merge the unchanged old matches with the rechecked ones (both sorted
	// and below from), then append the new rows' matches.
	out := make([]int, 0, len(matches)+len(again)+16)
	j := 0
	for _, i := range matches {
		if recheck[i] {
			continue
		}
		for j < len(again) && again[j] < i {
			out = append(out, again[j])
			j++
		}
		out = append(out, i)
	}
	out = append(out, again[j:]...)
	for i := from; i < n; i++ {
		if (i-from)%4096 == 0 && stop != nil && stop() {
			return nil, nil
		}
		if f.Match(x, i) {
			out = append(out, i)
		}
		if f.hasStatus() && x.Pair(i).Pending {
			newWatch = append(newWatch, i)
		}
	}
	slices.Sort(newWatch)
	return out, newWatch
}
