package library

// The text pass: a refresh indexes a tape's facts (its tapes row and its
// groups), which ls, the sessions view and a search by filters alone
// need; the text of its messages, which only a search for words needs,
// is indexed by the first such search, here. FTS5 tokenizing a few
// hundred bytes of every message is most of what indexing a big tape
// costs, so a tape listed is not made to wait on it.
//
// tapes.text_seq says how far a tape's text is indexed (the groups whose
// first message is before it have their text row) and tapes.text_indexed
// is the tapes.indexed its text was complete for: a tape with
// text_indexed <> indexed has groups without text, those from text_seq
// on. A group's facts never gain a message (an append makes new groups),
// so a group's text, once written, stays right. A whole read of a tape
// deletes its rows and starts from 0 again.
//
// Each transaction writes the text of some groups and moves text_seq
// with them, reading both under the write lock: a pass cancelled, or
// racing another process's, leaves an index that the next one completes.
// The message's bytes are read from the tape at the offsets its facts
// keep, through the same Text a refresh used to run.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// textTape is a tape whose text is behind its facts.
type textTape struct {
	id      int64
	path    string
	pending int64 // bytes of it whose text is not indexed, about (progress)
}

// IndexText indexes the text of the tapes whose text is behind their
// facts (those under these directories or files; with none, all of
// them), for a search. It stops when ctx ends, leaving what it did
// indexed. A line goes to Options.Progress after ProgressAfter, as for a
// refresh.
func (l *Library) IndexText(ctx context.Context, under ...string) error {
	l.textMu.Lock()
	defer l.textMu.Unlock()
	return l.withRebuild(func() error { return l.indexText(ctx, under) })
}

func (l *Library) indexText(ctx context.Context, under []string) error {
	where, args := underClause(under)
	rows, err := l.db.Query("SELECT id, path, indexed, text_indexed FROM tapes WHERE is_tape = 1 AND text_indexed <> indexed"+where+" ORDER BY id", args...)
	if err != nil {
		return err
	}
	var todo []textTape
	var total int64
	for rows.Next() {
		var t textTape
		var indexed, done int64
		if err := rows.Scan(&t.id, &t.path, &indexed, &done); err != nil {
			rows.Close()
			return err
		}
		t.pending = max(indexed-done, 0)
		total += t.pending
		todo = append(todo, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	start := time.Now()
	prog := l.startProgress(len(todo), total, true)
	for _, t := range todo {
		if err = l.textOf(ctx, t, prog); err != nil {
			break
		}
	}
	prog.end(l.opts.Progress, start, err)
	return err
}

// textOf indexes the text of one tape, a transaction at a time.
func (l *Library) textOf(ctx context.Context, t textTape, prog *progress) error {
	w := &textWriter{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, err := w.batch(ctx, l.db, t, prog)
		if err != nil {
			return fmt.Errorf("index the text of %s: %w", t.path, err)
		}
		if done {
			return nil
		}
	}
}

// textWriter writes a tape's text rows.
type textWriter struct {
	f   io.ReaderAt
	buf []byte // a group's bytes, reused
}

// How much a transaction of the pass writes: rounds of textGroups
// groups, for up to textBatchTime (at least one round). Variables for the
// tests.
var (
	textGroups    = 64
	textBatchTime = batchTime
	// textWritten, when set, is called after each group's text is
	// written (tests).
	textWritten func()
)

// batch writes the text of the tape's next groups in one transaction; done says the tape's text is complete (or the tape
// is gone from the index, or cut short on disk: the next refresh reads
// it again).
func (w *textWriter) batch(ctx context.Context, db *sql.DB, t textTape, prog *progress) (done bool, err error) {
	// Not under ctx: a transaction ended by it is rolled back, while the
	// groups written before it ended are worth keeping. ctx is looked at
	// between groups.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	bg := context.Background()
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var indexed, seq, textIndexed int64
	err = tx.QueryRowContext(bg, "SELECT indexed, text_seq, text_indexed FROM tapes WHERE id = ? AND is_tape = 1", t.id).Scan(&indexed, &seq, &textIndexed)
	if errors.Is(err, sql.ErrNoRows) || err == nil && textIndexed == indexed {
		return true, nil // forgotten, or done by another process meanwhile
	}
	if err != nil {
		return false, err
	}
	// The tape is opened under the write lock, after its row is read: a
	// tape replaced by another file since is read whole by the refresh
	// that sees it, which writes its rows anew.
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil // gone: the next refresh forgets it
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	w.f = plainReaderAt{f}
	ins, err := tx.PrepareContext(bg, textInsert)
	if err != nil {
		return false, err
	}
	defer ins.Close()
	base := t.id << 32
	start := time.Now()
	type group struct {
		first int
		facts []byte
	}
	var groups []group
	for round := 0; round == 0 || time.Since(start) < textBatchTime; round++ {
		if err := ctx.Err(); err != nil {
			if cerr := commitText(tx, t.id, seq, nil); cerr != nil {
				return false, cerr
			}
			return false, err
		}
		groups = groups[:0]
		rows, err := tx.QueryContext(bg, "SELECT id, facts FROM groups WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?", base|seq, base|0xffffffff, textGroups)
		if err != nil {
			return false, err
		}
		for rows.Next() {
			var id int64
			var facts []byte
			if err := rows.Scan(&id, &facts); err != nil {
				rows.Close()
				return false, err
			}
			groups = append(groups, group{first: int(id - base), facts: facts})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		if len(groups) == 0 {
			done = true
			break
		}
		// The groups' bytes are read and their text made in a goroutine
		// while FTS5 takes the text made before: FTS5's tokenizing is
		// most of the work, Text much of the rest.
		texts := make(chan groupText, 8)
		stop := make(chan struct{})
		go func() {
			defer close(texts)
			for _, g := range groups {
				gt := groupText{first: g.first}
				var rs []row
				if rs, gt.err = decodeFacts(g.facts, g.first); gt.err == nil {
					gt.next = g.first + len(rs)
					gt.args, gt.read, gt.ok, gt.err = w.texts(base, rs)
				}
				select {
				case texts <- gt:
				case <-stop:
					return
				}
				if gt.err != nil || !gt.ok {
					return
				}
			}
		}()
		stopped, err := func() (bool, error) {
			defer func() {
				close(stop)
				for range texts { // let the goroutine end
				}
			}()
			for gt := range texts {
				if gt.err != nil {
					return false, gt.err
				}
				if !gt.ok {
					// The tape is shorter than its facts say: it changed
					// since it was indexed, and the next refresh reads it
					// again. Keep what was written.
					return true, nil
				}
				if gt.args != nil {
					if _, err := ins.ExecContext(bg, gt.args...); err != nil {
						return false, err
					}
				}
				prog.read.Add(gt.read)
				seq = int64(gt.next)
				if textWritten != nil {
					textWritten()
				}
				if ctx.Err() != nil {
					return true, nil
				}
			}
			return false, nil
		}()
		if err != nil {
			return false, err
		}
		if stopped {
			if cerr := commitText(tx, t.id, seq, nil); cerr != nil {
				return false, cerr
			}
			return ctx.Err() == nil, ctx.Err()
		}
		if len(groups) < textGroups {
			done = true
			break
		}
	}
	var complete any
	if done {
		complete = indexed
	}
	return done, commitText(tx, t.id, seq, complete)
}

// commitText records how far the tape's text is indexed (and, when
// complete is set, for which indexed bytes it is complete) and commits.
func commitText(tx *sql.Tx, id, seq int64, complete any) error {
	_, err := tx.Exec("UPDATE tapes SET text_seq = ?, text_indexed = coalesce(?, text_indexed) WHERE id = ?", seq, complete, id)
	if err != nil {
		return err
	}
	return tx.Commit()
}

// groupText is a group's text row, made ready for the insert.
type groupText struct {
	first, next int   // the seq of its first message, and after its last
	args        []any // the insert's arguments; nil: no text
	read        int64 // bytes read
	ok          bool  // false: the tape ends before its messages
	err         error
}

// texts makes the arguments of the text row of a group, its messages'
// bytes read from the tape (nil when none has text); it returns the
// bytes read, and false when the tape ends before them.
func (w *textWriter) texts(base int64, rs []row) ([]any, int64, bool, error) {
	lo, hi := int64(-1), int64(0)
	for i := range rs {
		if rs[i].kind == tape.KindInvalid {
			continue
		}
		if lo < 0 {
			lo = rs[i].off
		}
		lo, hi = min(lo, rs[i].off), max(hi, rs[i].off+int64(rs[i].n))
	}
	if lo < 0 {
		return nil, 0, true, nil // no text
	}
	// The group's messages are one span of the tape, read at once; one
	// far too long for that is read a message at a time.
	const maxSpan = 8 << 20
	whole := hi-lo <= maxSpan
	if whole {
		if int64(cap(w.buf)) < hi-lo {
			w.buf = make([]byte, hi-lo)
		}
		w.buf = w.buf[:hi-lo]
		if k, err := w.f.ReadAt(w.buf, lo); k < len(w.buf) {
			if err == nil || errors.Is(err, io.EOF) {
				return nil, 0, false, nil
			}
			return nil, 0, false, err
		}
	}
	args := make([]any, 1+groupSize) // nil: no text, no work for FTS5
	args[0] = base | int64(rs[0].seq)
	hasText := false
	var read int64
	for i := range rs {
		r := &rs[i]
		if r.kind == tape.KindInvalid {
			continue
		}
		var raw []byte
		if whole {
			raw = w.buf[r.off-lo : r.off-lo+int64(r.n)]
		} else {
			raw = make([]byte, r.n)
			if k, err := w.f.ReadAt(raw, r.off); k < len(raw) {
				if err == nil || errors.Is(err, io.EOF) {
					return nil, 0, false, nil
				}
				return nil, 0, false, err
			}
		}
		read += int64(r.n)
		if s := Text(raw, TextLimit); s != "" {
			args[1+i] = s
			hasText = true
		}
	}
	if !hasText {
		return nil, read, true, nil
	}
	return args, read, true, nil
}
