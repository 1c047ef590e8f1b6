package library

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Tape is what the index knows of one tape.
type Tape struct {
	Path          string        `json:"path"`
	Size          int64         `json:"size"`
	ModTime       time.Time     `json:"mtime"`
	Servers       []string      `json:"servers"`
	Client        string        `json:"client,omitempty"`
	ClientVersion string        `json:"client_version,omitempty"`
	Protocol      string        `json:"protocol_version,omitempty"`
	Start         time.Time     `json:"start,omitzero"`
	Duration      time.Duration `json:"duration_ns"`
	Messages      int           `json:"messages"`
	Calls         int           `json:"calls"`
	RPCErrors     int           `json:"errors"`      // JSON-RPC errors, and servers that failed to start
	ToolErrors    int           `json:"tool_errors"` // results with isError
	Pending       int           `json:"pending"`
	Warnings      int           `json:"warnings"`
	// Partial says the tape ends in an unfinished line, indexed up to the
	// line before: a tape still being recorded.
	Partial bool `json:"partial,omitempty"`
}

// End is the tape's last timestamp, or its modification time when it has
// none.
func (t Tape) End() time.Time {
	if t.Start.IsZero() {
		return t.ModTime
	}
	return t.Start.Add(t.Duration)
}

const tapeColumns = `path, size, mtime, indexed, servers, client, client_version, protocol, start, end,
	messages, calls, rpc_errors, tool_errors, pending, warnings`

func scanTape(rows *sql.Rows) (Tape, error) {
	var t Tape
	var mtime, indexed int64
	var servers string
	var start, end sql.NullInt64
	err := rows.Scan(&t.Path, &t.Size, &mtime, &indexed, &servers, &t.Client, &t.ClientVersion, &t.Protocol, &start, &end,
		&t.Messages, &t.Calls, &t.RPCErrors, &t.ToolErrors, &t.Pending, &t.Warnings)
	if err != nil {
		return t, err
	}
	t.ModTime = time.Unix(0, mtime)
	t.Servers = []string{}
	if servers != "" {
		t.Servers = strings.Split(servers, "\t")
	}
	if start.Valid {
		t.Start = time.Unix(0, start.Int64)
		t.Duration = time.Duration(end.Int64 - start.Int64)
	}
	t.Partial = indexed < t.Size
	return t, nil
}

// Tapes returns the indexed tapes, newest first (by their first
// timestamp, or their modification time without one). With under, only
// the tapes in those directories (not below) or those very files.
func (l *Library) Tapes(under ...string) ([]Tape, error) {
	var out []Tape
	err := l.withRebuild(func() error {
		out = out[:0]
		where, args := underClause(under)
		rows, err := l.db.Query("SELECT "+tapeColumns+" FROM tapes WHERE is_tape = 1"+where+
			" ORDER BY coalesce(start, mtime) DESC, path", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTape(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

func underClause(under []string) (string, []any) {
	if len(under) == 0 {
		return "", nil
	}
	var ors []string
	var args []any
	for _, u := range under {
		ors = append(ors, "dir = ? OR path = ?")
		args = append(args, u, u)
	}
	return " AND (" + strings.Join(ors, " OR ") + ")", args
}

// Query is a search.
type Query struct {
	// Text is what to look for in the messages' string values: words
	// (all must occur), "quoted phrases", word* for a prefix, OR between
	// alternatives. Empty: every message the filters let through.
	Text string
	// Tool keeps the tools/call messages (requests and responses) of
	// this tool; Method the messages of this method (a response's is its
	// request's).
	Tool, Method string
	// Status keeps the exchanges in this state: ok, error (a JSON-RPC
	// error or a tool's failure), rpc-error, tool-error, pending,
	// cancelled, late, orphan.
	Status string
	// Since keeps messages recorded at or after it.
	Since time.Time
	// Under keeps the tapes of these directories or files.
	Under []string
	// Limit caps the hits (0: 100).
	Limit int
}

// Statuses are the values Query.Status takes.
var Statuses = []string{"ok", "error", "rpc-error", "tool-error", "negotiation", "pending", "cancelled", "late", "orphan"}

// Hit is a message a search found.
type Hit struct {
	Path    string    `json:"path"`
	Seq     int       `json:"seq"`
	Time    time.Time `json:"time,omitzero"`
	Kind    string    `json:"kind"`
	Method  string    `json:"method,omitempty"`
	Target  string    `json:"target,omitempty"`
	Status  string    `json:"status,omitempty"`
	Snippet string    `json:"snippet"`
	off     int64
	n       int
}

// Search is SearchContext without an end.
func (l *Library) Search(q Query) ([]Hit, error) {
	return l.SearchContext(context.Background(), q)
}

// SearchContext finds the messages that match q, newest first, each with
// a snippet of its text read from the tape. A search for words first
// indexes the text of the tapes it covers whose text is behind their
// facts (IndexText: the first search after a refresh that read new
// bytes), which ctx can stop.
func (l *Library) SearchContext(ctx context.Context, q Query) ([]Hit, error) {
	parts, terms := ftsParts(q.Text)
	match := strings.Join(parts, " ")
	if strings.TrimSpace(q.Text) != "" && match == "" {
		return nil, fmt.Errorf("search %q: no word to look for (words are letters and digits)", q.Text)
	}
	keep, err := filter(q)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	if match != "" {
		if err := l.IndexText(ctx, q.Under...); err != nil {
			return nil, err
		}
	}
	var hits []Hit
	err = l.withRebuild(func() error {
		var err error
		hits, err = l.search(q, parts, keep, limit)
		if err != nil && strings.Contains(err.Error(), "fts5") {
			return fmt.Errorf("search %q: %w", q.Text, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	snippets(hits, terms)
	return hits, nil
}

// filter returns what q's filters keep of a message.
func filter(q Query) (func(r *row) bool, error) {
	var statuses []string
	switch q.Status {
	case "":
	case "error":
		statuses = []string{"error", "tool-error"}
	case "rpc-error":
		statuses = []string{"error"}
	default:
		if !contains(Statuses, q.Status) {
			return nil, fmt.Errorf("status %q: expected one of %s", q.Status, strings.Join(Statuses, ", "))
		}
		statuses = []string{q.Status}
	}
	var since int64
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	return func(r *row) bool {
		if q.Tool != "" && (r.method != "tools/call" || r.target != q.Tool) {
			return false
		}
		if q.Method != "" && r.method != q.Method {
			return false
		}
		if statuses != nil && !contains(statuses, r.status) {
			return false
		}
		if since != 0 && (r.ts == 0 || r.ts < since) { // a message without a time is not after anything
			return false
		}
		return true
	}, nil
}

// searchBatch is how many candidate groups are looked into at a time.
const searchBatch = 32

// hit is a message found, before its tape's path is looked up.
type hit struct {
	id int64 // tape id << 32 | seq
	r  row
}

// before orders hits newest first (a message without a time last), then
// by tape and seq.
func (a *hit) before(b *hit) bool {
	if a.r.ts != b.r.ts {
		if a.r.ts == 0 || b.r.ts == 0 {
			return b.r.ts == 0
		}
		return a.r.ts > b.r.ts
	}
	return a.id < b.id
}

// search finds the limit first hits: the groups that may hold one (with
// text: those that match it as a whole) newest first, the messages of a
// few at a time, until no group left can hold a message newer than the
// last hit kept.
func (l *Library) search(q Query, parts []string, keep func(*row) bool, limit int) ([]Hit, error) {
	var scope map[int64]bool
	if u, args := underClause(q.Under); u != "" {
		scope = map[int64]bool{}
		rows, err := l.db.Query("SELECT id FROM tapes WHERE 1"+u, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			scope[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	match := strings.Join(parts, " ")
	type cand struct{ id, ts int64 }
	var cands []cand
	var rows *sql.Rows
	var err error
	if match != "" {
		rows, err = l.db.Query("SELECT g.id, g.ts_max FROM text JOIN groups g ON g.id = text.rowid WHERE text MATCH ?", candidates(parts))
	} else {
		rows, err = l.db.Query("SELECT id, ts_max FROM groups")
	}
	if err != nil {
		return nil, err
	}
	var since int64
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	for rows.Next() {
		var c cand
		var ts sql.NullInt64
		if err := rows.Scan(&c.id, &ts); err != nil {
			rows.Close()
			return nil, err
		}
		c.ts = ts.Int64
		if scope != nil && !scope[c.id>>32] || since != 0 && (c.ts == 0 || c.ts < since) {
			continue
		}
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	all := make([]int64, len(cands)) // the candidates' ids, sorted
	for i, c := range cands {
		all[i] = c.id
	}
	slices.Sort(all)
	slices.SortFunc(cands, func(a, b cand) int {
		if a.ts != b.ts {
			if a.ts == 0 { // without a time last
				return 1
			}
			if b.ts == 0 {
				return -1
			}
			return cmp.Compare(b.ts, a.ts)
		}
		return cmp.Compare(a.id, b.id)
	})
	var found []hit
	for len(cands) > 0 {
		if len(found) >= limit {
			// found is sorted: its last is the limit-th hit. A group whose
			// latest time is before it holds nothing newer.
			kth, next := found[limit-1].r.ts, cands[0].ts
			if kth != 0 && (next == 0 || next < kth) {
				break
			}
		}
		batch := cands[:min(searchBatch, len(cands))]
		cands = cands[len(batch):]
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = strconv.FormatInt(c.id, 10)
		}
		in := "(" + strings.Join(ids, ", ") + ")"
		var kept []hit
		masks := map[int64]uint64{} // group → its messages (bit K: its K-th) that passed the filters
		frows, err := l.db.Query("SELECT id, facts FROM groups WHERE id IN " + in)
		if err != nil {
			return nil, err
		}
		for frows.Next() {
			var id int64
			var facts []byte
			if err := frows.Scan(&id, &facts); err != nil {
				frows.Close()
				return nil, err
			}
			base := id &^ 0xffffffff
			rs, err := decodeFacts(facts, int(id-base))
			if err != nil {
				frows.Close()
				return nil, err
			}
			for k := range rs {
				if !keep(&rs[k]) {
					continue
				}
				kept = append(kept, hit{id: base | int64(rs[k].seq), r: rs[k]})
				masks[id] |= 1 << k
			}
		}
		frows.Close()
		if err := frows.Err(); err != nil {
			return nil, err
		}
		if match != "" && len(kept) > 0 {
			matched, err := l.matchSlots(masks, match, candidates(parts), all)
			if err != nil {
				return nil, err
			}
			kept = slices.DeleteFunc(kept, func(h hit) bool { return !matched[h.id] })
		}
		found = append(found, kept...)
		slices.SortFunc(found, func(a, b hit) int {
			if a.before(&b) {
				return -1
			}
			if b.before(&a) {
				return 1
			}
			return 0
		})
		found = found[:min(len(found), limit)]
	}
	paths := map[int64]string{}
	out := make([]Hit, 0, len(found))
	for _, f := range found {
		tid := f.id >> 32
		p, ok := paths[tid]
		if !ok {
			if err := l.db.QueryRow("SELECT path FROM tapes WHERE id = ?", tid).Scan(&p); err != nil {
				return nil, err
			}
			paths[tid] = p
		}
		h := Hit{Path: p, Seq: f.r.seq, Kind: f.r.kind.String(), Method: f.r.method, Target: f.r.target, Status: f.r.status, off: f.r.off, n: f.r.n}
		if f.r.ts != 0 {
			h.Time = time.Unix(0, f.r.ts)
		}
		out = append(out, h)
	}
	return out, nil
}

// matchSlots returns which of the messages of masks (a group's id → a bit
// for each of its messages to look at) match the FTS5 query match, each
// alone: match limited to the message's column ({mK} : (match)). The
// groups are taken in runs, each a rowid range FTS5 seeks to, as long as
// few other candidate groups (all, sorted) lie between them; within a run, the columns in eights first, with wider,
// the query that finds candidate groups (a superset), so that a rare
// word costs a few queries, not one a column.
func (l *Library) matchSlots(masks map[int64]uint64, match, wider string, all []int64) (map[int64]bool, error) {
	ids := slices.Sorted(maps.Keys(masks))
	matched := map[int64]bool{}
	query := func(q string, lo, hi int64, fn func(id int64)) error {
		rows, err := l.db.Query("SELECT rowid FROM text WHERE text MATCH ? AND rowid BETWEEN ? AND ?", q, lo, hi)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			fn(id)
		}
		return rows.Err()
	}
	for len(ids) > 0 {
		n := 1
		for n < len(ids) && between(all, ids[n-1], ids[n]) <= groupSize {
			n++
		}
		run := ids[:n]
		ids = ids[n:]
		lo, hi := run[0], run[len(run)-1]
		var union uint64
		for _, id := range run {
			union |= masks[id]
		}
		for o := 0; o < groupSize; o += 8 {
			eight := uint64(0xff) << o
			if union&eight == 0 {
				continue
			}
			cols := make([]string, 8)
			for i := range cols {
				cols[i] = fmt.Sprintf("m%d", o+i)
			}
			var some uint64 // of the eight, the columns worth a query
			err := query(fmt.Sprintf("{%s} : (%s)", strings.Join(cols, " "), wider), lo, hi, func(id int64) {
				some |= masks[id] & eight
			})
			if err != nil {
				return nil, err
			}
			for k := o; k < o+8; k++ {
				if some&(1<<k) == 0 {
					continue
				}
				err := query(fmt.Sprintf("{m%d} : (%s)", k, match), lo, hi, func(id int64) {
					if masks[id]&(1<<k) != 0 {
						matched[id+int64(k)] = true
					}
				})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return matched, nil
}

// between counts the ids of sorted strictly between a and b.
func between(sorted []int64, a, b int64) int {
	i, _ := slices.BinarySearch(sorted, a)
	j, _ := slices.BinarySearch(sorted, b)
	return max(0, j-i-1)
}

// candidates is the query that finds the groups which may hold a message
// matching the query of parts: a group matches it as a whole where one of
// its messages does, as long as the query has no NOT (a NOT's phrase in
// another message of the group would hide the group). With one, any
// phrase: a message that matches holds one of them.
func candidates(parts []string) string {
	if !slices.Contains(parts, "NOT") {
		return strings.Join(parts, " ")
	}
	var ps []string
	for _, p := range parts {
		if !isOperator(p) {
			ps = append(ps, p)
		}
	}
	return strings.Join(ps, " OR ")
}

// snippets reads each hit's message from its tape for its snippet.
func snippets(hits []Hit, terms []string) {
	byPath := map[string][]int{}
	for i, h := range hits {
		byPath[h.Path] = append(byPath[h.Path], i)
	}
	for path, idx := range byPath {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		for _, i := range idx {
			h := &hits[i]
			raw := make([]byte, h.n)
			if _, err := f.ReadAt(raw, h.off); err != nil {
				continue
			}
			h.Snippet = Snippet(Text(raw, 0), terms, 100)
		}
		f.Close()
	}
}

// ftsQuery turns a user's query into FTS5's syntax: each word or "quoted
// phrase" becomes a phrase (so punctuation such as tools/call or a-b is
// taken as words, not operators), word* a prefix, OR and NOT (in capitals)
// stay operators. It also returns the words, to mark them in snippets.
func ftsQuery(s string) (string, []string) {
	parts, terms := ftsParts(s)
	return strings.Join(parts, " "), terms
}

// ftsParts is ftsQuery's phrases and operators, apart.
func ftsParts(s string) (parts, terms []string) {
	for _, tok := range SplitQuery(s) {
		if tok == "OR" || tok == "NOT" || tok == "AND" {
			// Only between phrases: "a OR OR b" was an FTS5 syntax error.
			if len(parts) > 0 && !isOperator(parts[len(parts)-1]) {
				parts = append(parts, tok)
			}
			continue
		}
		prefix := strings.HasSuffix(tok, "*")
		word := strings.TrimSuffix(strings.Trim(tok, `"`), "*")
		if !strings.ContainsFunc(word, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		p := `"` + strings.ReplaceAll(word, `"`, `""`) + `"`
		if prefix {
			p += "*"
		}
		parts = append(parts, p)
		terms = append(terms, word)
	}
	for len(parts) > 0 && isOperator(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	return parts, terms
}

func isOperator(s string) bool { return s == "OR" || s == "NOT" || s == "AND" }

// SplitQuery splits a search line at spaces outside double quotes; a
// token keeps its quotes.
func SplitQuery(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// ParseSearchLine reads the sessions view's search line: tapedeck search's
// QUERY, with its flags written as tool:NAME, method:M, status:S and
// since:D among the words (outside quotes).
func ParseSearchLine(line string, now time.Time) (Query, error) {
	var q Query
	var words []string
	for _, tok := range SplitQuery(line) {
		if k, v, ok := strings.Cut(tok, ":"); ok && v != "" && !strings.HasPrefix(tok, `"`) {
			switch k {
			case "tool":
				q.Tool = v
				continue
			case "method":
				q.Method = v
				continue
			case "status":
				if !slices.Contains(Statuses, v) {
					return q, fmt.Errorf("status:%s: expected one of %s", v, strings.Join(Statuses, ", "))
				}
				q.Status = v
				continue
			case "since":
				t, err := ParseAge(v, now)
				if err != nil {
					return q, fmt.Errorf("since:%w", err)
				}
				q.Since = t
				continue
			}
		}
		words = append(words, tok)
	}
	q.Text = strings.Join(words, " ")
	if strings.TrimSpace(q.Text) == "" && q.Tool == "" && q.Method == "" && q.Status == "" && q.Since.IsZero() {
		return q, errors.New("expected words to look for, or a filter (tool:NAME, method:M, status:S, since:D)")
	}
	return q, nil
}

// Older returns the tapes whose last message (or, without timestamps,
// whose modification) is before cutoff, oldest first; never a tape
// modified in the last half minute: those are returned apart, as busy.
func (l *Library) Older(cutoff time.Time, under ...string) (old, busy []Tape, err error) {
	all, err := l.Tapes(under...)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range all {
		if !t.End().Before(cutoff) {
			continue
		}
		// A tape written to moments ago is being recorded, whatever its
		// timestamps say.
		if time.Since(t.ModTime) > settle {
			old = append(old, t)
		} else {
			busy = append(busy, t)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].End().Before(old[j].End()) })
	return old, busy, nil
}

// Settle is how recently a tape may have been written to and still be
// taken for one being recorded.
const Settle = settle

// ParseAge reads an age or a date as search --since and prune
// --older-than take them, and returns the moment it names: a duration
// before now (90m, 24h, 7d, 2w) or a date (2026-01-31, or RFC 3339 with a
// time), local time when it has no zone.
func ParseAge(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("expected an age (24h, 7d, 2w) or a date (2026-01-31)")
	}
	if n, unit := s[:len(s)-1], s[len(s)-1]; unit == 'd' || unit == 'w' {
		if v, err := strconv.ParseFloat(n, 64); err == nil && v >= 0 {
			day := 24 * time.Hour
			if unit == 'w' {
				day *= 7
			}
			return now.Add(-time.Duration(v * float64(day))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: expected an age of 0 or more", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: expected an age (90m, 24h, 7d, 2w) or a date (2026-01-31, 2026-01-31T15:04)", s)
}

// Clean resolves paths as Add does, for Tapes' and Search's under.
func Clean(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Clean(a))
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
