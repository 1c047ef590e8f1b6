package library

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TapeExts are the file name endings a directory's tapes have; a file
// named on its own is taken whatever its name.
var TapeExts = []string{".jsonl", ".ndjson", ".tape"}

// settle is how long a tape's unfinished last line may stay unfinished
// before it is indexed as torn: a recorder writes whole lines in one
// write(2), so a partial line older than this is a cut-off tape.
const settle = 30 * time.Second

// Add puts directories and tape files into the library. Paths are made
// absolute; each must exist.
func (l *Library) Add(paths ...string) ([]string, error) {
	var abs []string
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("add %s to the library: %w", p, err)
		}
		if !st.IsDir() && !st.Mode().IsRegular() {
			return nil, fmt.Errorf("add %s to the library: expected a directory or a tape file", p)
		}
		abs = append(abs, filepath.Clean(a))
	}
	err := l.withRebuild(func() error {
		tx, err := l.db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, a := range abs {
			if _, err := tx.Exec("INSERT OR IGNORE INTO roots(path) VALUES (?)", a); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	return abs, err
}

// Roots returns the directories and files the library covers: the
// default directory first, then those added.
func (l *Library) Roots() ([]string, error) {
	var roots []string
	if l.opts.DefaultDir != "" {
		roots = append(roots, l.opts.DefaultDir)
	}
	err := l.withRebuild(func() error {
		rows, err := l.db.Query("SELECT path FROM roots ORDER BY path")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				return err
			}
			if p != l.opts.DefaultDir {
				roots = append(roots, p)
			}
		}
		return rows.Err()
	})
	return roots, err
}

// Report says what a Refresh did.
type Report struct {
	Scanned  int   // files looked at
	Indexed  int   // tapes (re)indexed
	Appended int   // of which read from their old end only (append.go)
	Removed  int   // tapes gone from disk, forgotten
	Skipped  int   // files that are not tapes
	Messages int   // messages indexed
	Bytes    int64 // bytes of tapes read
}

// fileInfo is a file met while scanning.
type fileInfo struct {
	path  string
	size  int64
	mtime int64
	prior *prior // set when only appended to since it was indexed
}

// known is a file's row in the index.
type known struct {
	id          int64
	size, mtime int64
	indexed     int64
	isTape      bool
}

// Refresh brings the index up to date with the tapes on disk: new and
// changed tapes are indexed, removed ones forgotten. Unchanged tapes are
// only stat'ed.
func (l *Library) Refresh(ctx context.Context) (Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rep Report
	err := l.withRebuild(func() error {
		var err error
		rep, err = l.refresh(ctx)
		return err
	})
	return rep, err
}

func (l *Library) refresh(ctx context.Context) (Report, error) {
	var rep Report
	roots, err := l.Roots()
	if err != nil {
		return rep, err
	}
	files := scan(roots)
	rep.Scanned = len(files)
	have, err := l.known()
	if err != nil {
		return rep, err
	}
	now := time.Now().UnixNano()
	var todo []fileInfo
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f.path] = true
		k, ok := have[f.path]
		switch {
		case !ok:
			todo = append(todo, f)
		case k.size != f.size, k.mtime != f.mtime,
			k.isTape && k.indexed < k.size && now-f.mtime > int64(settle): // an unfinished last line that stayed so: index it as torn
			if f.prior, err = l.loadPrior(k, f); err != nil {
				return rep, err
			}
			todo = append(todo, f)
		}
	}
	var gone []int64
	for p, k := range have {
		if !seen[p] {
			gone = append(gone, k.id)
		}
	}
	if len(gone) > 0 {
		if err := l.forget(ctx, gone); err != nil {
			return rep, err
		}
		rep.Removed = len(gone)
	}
	if len(todo) == 0 {
		return rep, nil
	}
	// The largest first, so that one big tape does not finish alone.
	slices.SortFunc(todo, func(a, b fileInfo) int { return int(min(max(b.size-a.size, -1), 1)) })
	var total int64
	for _, f := range todo {
		total += f.size
		if f.prior != nil {
			total -= f.prior.sum.indexed
		}
	}
	start := time.Now()
	prog := l.startProgress(len(todo), total, false)
	l.reading.Store(prog)
	ir, err := l.index(ctx, todo, &prog.read)
	l.reading.Store(nil)
	prog.end(l.opts.Progress, start, err)
	rep.Indexed, rep.Appended, rep.Skipped, rep.Messages, rep.Bytes = ir.Indexed, ir.Appended, ir.Skipped, ir.Messages, ir.Bytes
	rep.Removed += ir.Removed
	return rep, err
}

// scan lists the tapes under roots: the files of each directory whose
// names end in a tape extension (not recursively), and each file root.
// Roots that are gone or unreadable list nothing.
func scan(roots []string) []fileInfo {
	var out []fileInfo
	dup := map[string]bool{}
	add := func(path string, st fs.FileInfo) {
		if dup[path] || !st.Mode().IsRegular() {
			return
		}
		dup[path] = true
		out = append(out, fileInfo{path: path, size: st.Size(), mtime: st.ModTime().UnixNano()})
	}
	for _, root := range roots {
		st, err := os.Stat(root)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			add(root, st)
			continue
		}
		ents, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !IsTapeName(e.Name()) {
				continue
			}
			p := filepath.Join(root, e.Name())
			var info fs.FileInfo
			if e.Type()&fs.ModeSymlink != 0 {
				info, err = os.Stat(p)
			} else {
				info, err = e.Info()
			}
			if err != nil {
				continue // removed since the listing
			}
			add(p, info)
		}
	}
	return out
}

// IsTapeName reports whether a file in a directory is taken for a tape by
// its name.
func IsTapeName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, ext := range TapeExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

func (l *Library) known() (map[string]known, error) {
	rows, err := l.db.Query("SELECT path, id, size, mtime, indexed, is_tape FROM tapes")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]known{}
	for rows.Next() {
		var p string
		var k known
		if err := rows.Scan(&p, &k.id, &k.size, &k.mtime, &k.indexed, &k.isTape); err != nil {
			return nil, err
		}
		out[p] = k
	}
	return out, rows.Err()
}

// forget deletes tapes' rows.
func (l *Library) forget(ctx context.Context, ids []int64) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, id := range ids {
		if err := deleteTape(ctx, tx, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func deleteTape(ctx context.Context, tx *sql.Tx, id int64) error {
	lo, hi := id<<32, id<<32|0xffffffff
	if _, err := tx.ExecContext(ctx, "DELETE FROM text WHERE rowid BETWEEN ? AND ?", lo, hi); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM groups WHERE id BETWEEN ? AND ?", lo, hi); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM tapes WHERE id = ?", id)
	return err
}

// index reads the tapes of todo with a few workers and writes what they
// find through one writer, each tape whole in one transaction (a
// transaction holds a few tapes' rows; see batchRows).
func (l *Library) index(ctx context.Context, todo []fileInfo, read *atomic.Int64) (Report, error) {
	workers := l.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(todo))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Each tape read streams its rows to the writer in chunks; the writer
	// takes the tapes in the order of todo (so the ids they get, which
	// order the hits of a search with the same time, do not depend on
	// which worker starts first): each is queued for the writer, then
	// handed to a worker.
	jobs := make(chan *tapeRows)
	tapes := make(chan *tapeRows, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				t.err = readTape(ctx, t)
				t.decide()
				close(t.chunks)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for _, f := range todo {
			t := &tapeRows{file: f, prior: f.prior, chunks: make(chan []row, 4), decided: make(chan struct{}), read: read}
			t.decide = sync.OnceFunc(func() { close(t.decided) })
			select {
			case tapes <- t:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- t:
			case <-ctx.Done():
				t.err = ctx.Err() // queued, never read: the writer sees it end
				t.decide()
				close(t.chunks)
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(tapes)
	}()

	var rep Report
	var firstErr error
	var b *batch
	for t := range tapes {
		if firstErr == nil && b == nil {
			b, firstErr = l.begin(ctx)
		}
		if firstErr != nil {
			for range t.chunks { // let the worker finish
			}
			continue
		}
		if err := b.write(ctx, t, &rep); err != nil {
			firstErr = err
			cancel()
			for range t.chunks {
			}
			continue
		}
		if b.rows >= batchRows || time.Since(b.start) >= batchTime {
			firstErr = b.tx.Commit()
			b.close()
			b = nil
		}
	}
	if b != nil {
		if firstErr == nil {
			firstErr = b.tx.Commit()
		}
		b.close()
	}
	return rep, firstErr
}

// A transaction holds the rows of several tapes, whole, up to these: few
// commits for many small tapes, and another process never waits long for
// the write lock.
const (
	batchRows = 50_000
	batchTime = 250 * time.Millisecond
)

// batch is an open write transaction with its statements.
type batch struct {
	tx    *sql.Tx
	grp   *sql.Stmt // a group's facts
	facts []byte    // reused
	rows  int
	start time.Time
}

func (l *Library) begin(ctx context.Context) (*batch, error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	b := &batch{tx: tx, start: time.Now()}
	for _, s := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&b.grp, "INSERT INTO groups(id, ts_max, facts) VALUES (?, ?, ?)"},
	} {
		if *s.st, err = tx.PrepareContext(ctx, s.sql); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// close ends the transaction: after a Commit, the Rollback does nothing.
func (b *batch) close() {
	if b.grp != nil {
		b.grp.Close()
	}
	b.tx.Rollback()
}

// write stores one tape's rows, unless another process stored the same
// version of the tape first (checked under the write lock).
func (b *batch) write(ctx context.Context, t *tapeRows, rep *Report) (err error) {
	<-t.decided // whether it is read from its old end
	tx := b.tx
	var id int64
	var k known
	switch err = tx.QueryRowContext(ctx, "SELECT id, size, mtime, indexed FROM tapes WHERE path = ?", t.file.path).Scan(&id, &k.size, &k.mtime, &k.indexed); {
	case errors.Is(err, sql.ErrNoRows):
		id = 0
	case err != nil:
		return err
	case k.size == t.file.size && k.mtime == t.file.mtime && k.indexed == t.file.size:
		// Another process indexed this very version meanwhile.
		for range t.chunks {
		}
		return nil
	case t.prior != nil:
		if id != t.prior.id || k.size != t.prior.size || k.mtime != t.prior.mtime || k.indexed != t.prior.sum.indexed {
			// Another process changed its rows since they were read: the
			// next refresh reads it again.
			for range t.chunks {
			}
			return nil
		}
		return b.writeAppend(ctx, t, id, rep)
	default:
		if err = deleteTape(ctx, tx, id); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO tapes(id, path, dir, size, mtime, indexed, is_tape) VALUES (?, ?, ?, ?, ?, 0, 0)`,
		nullID(id), t.file.path, filepath.Dir(t.file.path), t.file.size, t.file.mtime)
	if err != nil {
		return err
	}
	if id, err = res.LastInsertId(); err != nil {
		return err
	}
	if err = b.insert(ctx, t, id<<32); err != nil {
		return err
	}
	if t.err != nil {
		if errors.Is(t.err, os.ErrNotExist) {
			// Gone while it was read: forget it.
			if err = deleteTape(ctx, tx, id); err != nil {
				return err
			}
			rep.Removed++
			return nil
		}
		return fmt.Errorf("index %s: %w", t.file.path, t.err)
	}
	return b.finish(ctx, t, id, rep)
}

// insert stores the rows t's reading streams, in groups of up to
// groupSize consecutive messages of a chunk (group.go). The statements
// run without ctx: modernc.org/sqlite starts a goroutine a call to watch
// a context that can end, which costs more than the row; ctx is looked at
// between chunks instead (a chunk is a few milliseconds of inserts).
func (b *batch) insert(ctx context.Context, t *tapeRows, base int64) error {
	bg := context.Background()
	for chunk := range t.chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		for rest := chunk; len(rest) > 0; {
			n := 1
			for n < min(groupSize, len(rest)) && rest[n].seq == rest[0].seq+n {
				n++
			}
			if err := b.group(bg, base, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		b.rows += len(chunk)
	}
	return nil
}

// group stores one group's facts; its messages' text is indexed when a
// search needs it (textpass.go).
func (b *batch) group(ctx context.Context, base int64, rows []row) error {
	id := base | int64(rows[0].seq)
	var tsMax int64
	for i := range rows {
		tsMax = max(tsMax, rows[i].ts)
	}
	b.facts = encodeFacts(b.facts[:0], rows)
	_, err := b.grp.ExecContext(ctx, id, nullTime(tsMax), b.facts)
	return err
}

// writeAppend stores the rows of what was appended to a tape since it was
// indexed, and the changes to its context messages.
func (b *batch) writeAppend(ctx context.Context, t *tapeRows, id int64, rep *Report) (err error) {
	base := id << 32
	if err = b.insert(ctx, t, base); err != nil {
		return err
	}
	if t.err != nil {
		if errors.Is(t.err, os.ErrNotExist) {
			if err = deleteTape(ctx, b.tx, id); err != nil {
				return err
			}
			rep.Removed++
			return nil
		}
		return fmt.Errorf("index %s: %w", t.file.path, t.err)
	}
	if t.prior == nil {
		return fmt.Errorf("index %s: read whole where an append was expected", t.file.path)
	}
	if err = patchFacts(ctx, b.tx, base, t.updates, func(r, u *row) { r.status, r.target, r.method = u.status, u.target, u.method }); err != nil {
		return err
	}
	rep.Appended++
	return b.finish(ctx, t, id, rep)
}

// patchFacts applies set to the facts of the messages of changes (by
// seq) in the groups of the tape whose ids start at base: each group
// changed is read and written once.
func patchFacts(ctx context.Context, tx *sql.Tx, base int64, changes []row, set func(r, change *row)) error {
	if len(changes) == 0 {
		return nil
	}
	type group struct {
		first int
		rows  []row
	}
	groups := map[int64]*group{}
	var order []int64
	for i := range changes {
		c := &changes[i]
		var g *group
		for _, id := range order { // most changes fall in a few groups
			if gg := groups[id]; c.seq >= gg.first && c.seq < gg.first+len(gg.rows) {
				g = gg
				break
			}
		}
		if g == nil {
			var id int64
			var facts []byte
			err := tx.QueryRowContext(ctx, "SELECT id, facts FROM groups WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT 1", base, base|int64(c.seq)).Scan(&id, &facts)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("message %d: no group holds it: %w", c.seq, errCorruptIndex)
			}
			if err != nil {
				return err
			}
			rows, err := decodeFacts(facts, int(id-base))
			if err != nil {
				return err
			}
			g = &group{first: int(id - base), rows: rows}
			if c.seq >= g.first+len(rows) {
				return fmt.Errorf("message %d: no group holds it: %w", c.seq, errCorruptIndex)
			}
			groups[id] = g
			order = append(order, id)
		}
		set(&g.rows[c.seq-g.first], c)
	}
	for _, id := range order {
		if _, err := tx.ExecContext(ctx, "UPDATE groups SET facts = ? WHERE id = ?", encodeFacts(nil, groups[id].rows), id); err != nil {
			return err
		}
	}
	return nil
}

// finish sets the targets read late and the tape's row.
func (b *batch) finish(ctx context.Context, t *tapeRows, id int64, rep *Report) error {
	base := id << 32
	if err := patchFacts(ctx, b.tx, base, t.fixups, func(r, fix *row) { r.target = fix.target }); err != nil {
		return err
	}
	s := &t.sum
	var resume, tail any
	if t.resume != nil && t.tail != nil {
		resume, tail = t.resume, t.tail
	}
	_, err := b.tx.ExecContext(ctx, `UPDATE tapes SET size = ?, mtime = ?, indexed = ?, is_tape = ?, servers = ?, client = ?, client_version = ?, protocol = ?,
		start = ?, end = ?, messages = ?, calls = ?, rpc_errors = ?, tool_errors = ?, pending = ?, warnings = ?, resume = ?, tail = ? WHERE id = ?`,
		t.file.size, t.file.mtime, s.indexed, s.isTape, strings.Join(s.servers, "\t"), s.client, s.clientVersion, s.protocol,
		nullTime(s.start), nullTime(s.end), s.messages, s.calls, s.rpcErrors, s.toolErrors, s.pending, s.warnings, resume, tail, id)
	if err != nil {
		return err
	}
	b.rows++
	if s.isTape {
		rep.Indexed++
		rep.Messages += s.messages
		rep.Bytes += s.read
	} else {
		rep.Skipped++
	}
	return nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func nullTime(ns int64) any {
	if ns == 0 {
		return nil
	}
	return ns
}
