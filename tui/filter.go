package tui

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

// Filter selects messages. A query is space-separated terms, all of which
// must match: method:M (substring of the method, or of the request's method
// for a response), tool:T (params.name of a call, exact), dir:send|recv|
// lifecycle, server:S (exact), status:error|ok|pending|orphan|cancelled|late|
// invalid, id:ID (the JSON-RPC id, 3 or "abc"), and free text, searched in
// the raw message (case-insensitive).
type Filter struct {
	Query  string
	method []string
	tool   []string
	dir    []tape.Dir
	server []string
	status []string
	id     []string
	text   [][]byte
}

// ParseFilter parses a query.
func ParseFilter(q string) (Filter, error) {
	f := Filter{Query: strings.TrimSpace(q)}
	for _, term := range strings.Fields(q) {
		k, v, ok := strings.Cut(term, ":")
		if !ok || v == "" {
			f.text = append(f.text, bytes.ToLower([]byte(term)))
			continue
		}
		switch strings.ToLower(k) {
		case "method":
			f.method = append(f.method, v)
		case "tool":
			f.tool = append(f.tool, v)
		case "dir":
			switch strings.ToLower(v) {
			case "send", "→", "out":
				f.dir = append(f.dir, tape.DirSend)
			case "recv", "←", "in":
				f.dir = append(f.dir, tape.DirRecv)
			case "lifecycle":
				f.dir = append(f.dir, tape.DirLifecycle)
			default:
				return f, fmt.Errorf("filter %q: dir %q is not send, recv or lifecycle", term, v)
			}
		case "server":
			f.server = append(f.server, v)
		case "status":
			switch v = strings.ToLower(v); v {
			case "error", "ok", "pending", "orphan", "cancelled", "late", "invalid":
				f.status = append(f.status, v)
			default:
				return f, fmt.Errorf("filter %q: status %q is not error, ok, pending, orphan, cancelled, late or invalid", term, v)
			}
		case "id":
			f.id = append(f.id, v)
		default:
			// "a:b" that is not a known field is free text (e.g. a URI).
			f.text = append(f.text, bytes.ToLower([]byte(term)))
		}
	}
	return f, nil
}

// Empty reports whether the filter matches everything.
func (f Filter) Empty() bool { return f.Query == "" }

// needsBody reports whether matching reads message bodies.
func (f Filter) needsBody() bool { return len(f.tool)+len(f.id)+len(f.text) > 0 }

// Match reports whether message i of x matches.
func (f Filter) Match(x *tape.Index, i int) bool {
	e := x.Entry(i)
	p := x.Pair(i)
	method := e.Method
	if e.Kind == tape.KindResponse {
		method = p.Method
	}
	for _, m := range f.method {
		if !strings.Contains(method, m) {
			return false
		}
	}
	for _, d := range f.dir {
		if e.Dir != d {
			return false
		}
	}
	for _, s := range f.server {
		if e.Server != s {
			return false
		}
	}
	for _, st := range f.status {
		if !statusIs(e, p, st) {
			return false
		}
	}
	if !f.needsBody() {
		return true
	}
	full, err := x.Message(i)
	if err != nil {
		return false
	}
	for _, id := range f.id {
		if string(full.ID) != id && string(full.ID) != fmt.Sprintf("%q", id) {
			return false
		}
	}
	if len(f.tool) > 0 {
		name := ""
		switch {
		case e.Kind == tape.KindRequest:
			name = tape.Target(e.Method, full.Raw)
		case e.Kind == tape.KindResponse && p.Partner >= 0:
			name = callName(x, p.Partner, p.Method)
		}
		for _, t := range f.tool {
			if name != t {
				return false
			}
		}
	}
	if len(f.text) > 0 {
		low := bytes.ToLower(full.Raw)
		for _, t := range f.text {
			if !bytes.Contains(low, t) {
				return false
			}
		}
	}
	return true
}

func statusIs(e tape.Entry, p tape.Pair, st string) bool {
	switch st {
	case "error": // any failure: a JSON-RPC error, a tool's, an orphan or invalid line
		return e.Failed() != tape.NoFailure || e.Kind == tape.KindInvalid || p.Orphan
	case "tool-error":
		return e.Failed() == tape.ToolError
	case "ok":
		return e.Kind == tape.KindResponse && e.Failed() == tape.NoFailure
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
func (f Filter) hasStatus() bool { return len(f.status) > 0 }

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
