// Package library keeps an index of tapes in an embedded SQLite database
// (modernc.org/sqlite, pure Go) so that tapedeck ls, search and prune answer
// at once over thousands of tapes.
//
// The tapes stay the source of truth: the index is a cache. Refresh reads
// only the tapes whose size or modification time changed since they were
// indexed, forgets the tapes that are gone, and indexes a tape still being
// recorded up to its last whole line. Tapes are opened read-only and without
// locks, so a recorder is never blocked. A corrupt or unreadable index file
// is removed and rebuilt, with a note, not an error; a state directory that
// cannot be written gives an in-memory index for the run, with a note.
//
// Several processes may share one index: it is in WAL mode with a busy
// timeout, and every change to a tape's rows is one IMMEDIATE transaction
// that checks, under the write lock, whether another process indexed the
// same version of the tape first.
//
// Schema: tapes (one row per file met, a non-tape file marked so it is not
// read again), groups (a row per up to 64 consecutive messages of a tape,
// their facts in one BLOB; its id is the tape's id shifted left 32 bits
// plus the seq of its first message, so a tape's rows are one id range
// and need no second index), and text, a contentless FTS5 table over the
// same rowids, a column per message of the group holding the string
// values of its params, result or error, cut to TextLimit bytes (see
// group.go). A refresh writes a tape's facts (tapes, groups) only; the
// text of its messages is indexed by the first search that needs it
// (textpass.go), so that ls and the sessions view never wait on FTS5.
// Snippets are made from the tape itself (the message's offset
// and length are kept), so the text is not stored twice.
package library

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// schemaVersion is kept in PRAGMA user_version; an index of another
// version is rebuilt. 2: a rejected server/discover probe is version
// negotiation, no longer counted among a tape's errors (status
// "negotiation"). 3: tapes.resume and tapes.tail, so that a tape only
// appended to is indexed from its old end (append.go). 4: groups of
// messages (group.go) instead of a messages row and a text row each. 5:
// tapes.text_seq and tapes.text_indexed, the text indexed apart from the
// facts, when a search needs it (textpass.go). 6: a 2026-07-28 session's
// client and protocol read from its server/discover probe's _meta (no
// initialize says them).
const schemaVersion = 6

// TextLimit is how many bytes of a message's string values are indexed
// for search: enough for the words that name what a call was about, small
// enough that the index stays a fraction of the tapes.
const TextLimit = 384

var schema = `
CREATE TABLE IF NOT EXISTS roots(
	path TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tapes(
	id INTEGER PRIMARY KEY,
	path TEXT NOT NULL UNIQUE,
	dir TEXT NOT NULL,
	size INTEGER NOT NULL,      -- bytes, when indexed
	mtime INTEGER NOT NULL,     -- unix nanoseconds, when indexed
	indexed INTEGER NOT NULL,   -- bytes indexed: up to the last whole line
	is_tape INTEGER NOT NULL,   -- 0: a file that is not a tape
	servers TEXT NOT NULL DEFAULT '',  -- tab-separated, in order of appearance
	client TEXT NOT NULL DEFAULT '',
	client_version TEXT NOT NULL DEFAULT '',
	protocol TEXT NOT NULL DEFAULT '',
	start INTEGER,              -- unix nanoseconds of the first timestamp
	end INTEGER,                -- and of the last
	messages INTEGER NOT NULL DEFAULT 0,
	calls INTEGER NOT NULL DEFAULT 0,
	rpc_errors INTEGER NOT NULL DEFAULT 0,
	tool_errors INTEGER NOT NULL DEFAULT 0,
	pending INTEGER NOT NULL DEFAULT 0,
	warnings INTEGER NOT NULL DEFAULT 0,
	resume BLOB,                -- what an append needs of the indexed part (append.go); NULL: read it all again
	tail BLOB,                  -- fingerprint of the indexed bytes' head and tail; NULL: not resumable
	text_seq INTEGER NOT NULL DEFAULT 0,     -- the messages before this seq have their text in text (textpass.go)
	text_indexed INTEGER NOT NULL DEFAULT 0  -- indexed, when all of them had: text_indexed <> indexed is a tape whose text is behind
);
CREATE TABLE IF NOT EXISTS groups(
	id INTEGER PRIMARY KEY,     -- tape id << 32 | seq of its first message
	ts_max INTEGER,             -- the latest time of its messages, NULL when none has one
	facts BLOB NOT NULL         -- per message: kind, method, target, status, time, offset, length (group.go)
);
CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
	` + textColumns + `, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
`

// Options configure Open.
type Options struct {
	// Path is the index file; empty for an index in memory.
	Path string
	// DefaultDir is a directory of tapes always covered (tapedeck record's
	// default), whether it exists or not.
	DefaultDir string
	// Notes receives what the user should know but is no error: a rebuilt
	// index, an in-memory fallback. Nil discards them.
	Notes io.Writer
	// Progress receives a line about a refresh still reading tapes after
	// ProgressAfter (0: one second), a line every few seconds after, and
	// one when it ends. Nil says nothing.
	Progress      io.Writer
	ProgressAfter time.Duration
	// Workers index tapes in parallel; 0 means GOMAXPROCS.
	Workers int
}

// Library is an open index of tapes.
type Library struct {
	opts   Options
	db     *sql.DB
	memory bool
	mu     sync.Mutex // one Refresh at a time within a process
	textMu sync.Mutex // one text pass at a time within a process
	// reading is the progress of the refresh reading tapes, nil when none
	// is (Indexing).
	reading atomic.Pointer[progress]
	// keptRoots are the directories of an index of another version, to
	// add back once it is rebuilt (setup, restoreRoots).
	keptRoots []string
}

// Open opens (creating it if need be) the index at opts.Path. A file that
// is not a valid index of this version is removed and rebuilt; a path that
// cannot be written gives an index in memory. Both say so on opts.Notes.
func Open(opts Options) (*Library, error) {
	if opts.Notes == nil {
		opts.Notes = io.Discard
	}
	l := &Library{opts: opts}
	if opts.Path == "" {
		return l, l.openMemory()
	}
	_, statErr := os.Stat(opts.Path)
	err := l.openFile()
	if err == nil {
		if errors.Is(statErr, os.ErrNotExist) {
			fmt.Fprintf(opts.Notes, "tapedeck: no index of the tapes yet; building it at %s\n", opts.Path)
		}
		return l, nil
	}
	if isCorrupt(err) {
		if !errors.Is(err, errOtherVersion) {
			fmt.Fprintf(opts.Notes, "tapedeck: the index %s is unreadable (%v); rebuilding it from the tapes\n", opts.Path, shortErr(err))
		}
		if err = l.rebuildFile(); err == nil {
			err = l.restoreRoots()
		}
		if err == nil {
			return l, nil
		}
	}
	if isUnwritable(err) {
		fmt.Fprintf(opts.Notes, "tapedeck: note: cannot write the index %s (%v); using an index in memory for this run\n", opts.Path, shortErr(err))
		return l, l.openMemory()
	}
	return nil, fmt.Errorf("open the index %s: %w", opts.Path, err)
}

// Memory reports whether the index lives in memory only.
func (l *Library) Memory() bool { return l.memory }

// Close closes the index, once a Refresh or a text pass in progress (in
// another goroutine) has ended: cancel its context first.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.textMu.Lock()
	defer l.textMu.Unlock()
	if l.db == nil {
		return nil
	}
	err := l.db.Close()
	l.db = nil
	return err
}

func (l *Library) openMemory() error {
	db, err := sql.Open("sqlite", "file::memory:?_txlock=immediate")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1) // each connection to :memory: is its own database
	l.db, l.memory = db, true
	if err := l.setup(); err != nil {
		db.Close()
		l.db = nil
		return err
	}
	return nil
}

func (l *Library) openFile() error {
	if err := os.MkdirAll(filepath.Dir(l.opts.Path), 0o700); err != nil {
		return err
	}
	// A probe: SQLite opens a file it cannot write read-only and fails
	// later; a directory that takes no new file cannot hold the WAL.
	if f, err := os.CreateTemp(filepath.Dir(l.opts.Path), ".index-probe-*"); err != nil {
		return err
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	// The index holds what the tapes hold (0600): it is created, and kept,
	// private to the user too. SQLite gives its WAL and shared-memory files
	// the database file's mode.
	if err := privateFile(l.opts.Path); err != nil {
		return err
	}
	dsn := "file:" + escapePath(l.opts.Path) +
		"?_pragma=busy_timeout(" + strconv.FormatInt(openBusyFor.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	// Processes opening a new index at once: SQLite can answer the one
	// whose connection asks for WAL while another converts the file with
	// SQLITE_BUSY without waiting busy_timeout (2 of 40 runs of
	// TestConcurrentIndexers). That open is tried again, as long as the
	// busy timeout.
	deadline := time.Now().Add(openBusyFor)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := l.openDSN(dsn)
		if err == nil || !isBusy(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("expected another process's lock on it to end within %s (SQLite's busy timeout), found it still held (another tapedeck indexing, or a program with the file open in a transaction): %w", openBusyFor, err)
		}
		time.Sleep(wait)
	}
}

// openBusyFor is how long openFile tries again an open SQLite answered
// SQLITE_BUSY, and the connection's busy_timeout (a variable for tests).
var openBusyFor = 30 * time.Second

func (l *Library) openDSN(dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	// One connection: the process writes through one, and readers never
	// wait on their own writer. Other processes share the file through WAL.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	l.db = db
	if err := l.setup(); err != nil {
		db.Close()
		l.db = nil
		return err
	}
	return nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// privateFile creates the file at path with mode 0600, or takes the
// group's and others' permissions off an existing regular file (an index a
// version before made 0644).
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
		return f.Chmod(fi.Mode().Perm() &^ 0o077)
	}
	return nil
}

// keepRoots reads the directories added to the library before the index is
// rebuilt, as far as it can: they are the user's, not a cache, and outlive
// the rebuild (every version has had roots).
func (l *Library) keepRoots() {
	rows, err := l.db.Query("SELECT path FROM roots")
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if rows.Scan(&p) == nil {
			l.keptRoots = append(l.keptRoots, p)
		}
	}
}

// restoreRoots adds back the directories keepRoots read.
func (l *Library) restoreRoots() error {
	roots := l.keptRoots
	l.keptRoots = nil
	for _, p := range roots {
		if _, err := l.db.Exec("INSERT OR IGNORE INTO roots(path) VALUES (?)", p); err != nil {
			return err
		}
	}
	return nil
}

// rebuildFile removes the index file (and its WAL) and creates it anew.
func (l *Library) rebuildFile() error {
	if l.db != nil {
		l.db.Close()
		l.db = nil
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(l.opts.Path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return l.openFile()
}

// setup creates the schema, or rebuilds an index of another version.
func (l *Library) setup() error {
	ctx := context.Background()
	var v int
	if err := l.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v != 0 && v != schemaVersion {
		if l.memory {
			return fmt.Errorf("an in-memory index of version %d", v)
		}
		fmt.Fprintf(l.opts.Notes, "tapedeck: the index %s is of another version (%d, expected %d); rebuilding it\n", l.opts.Path, v, schemaVersion)
		l.keepRoots()
		return errOtherVersion
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// A cheap read of every table catches a file whose header is fine and
	// whose pages are not.
	for _, q := range []string{"SELECT count(*) FROM tapes", "SELECT count(*) FROM roots", "SELECT max(id) FROM groups"} {
		var n sql.NullInt64
		if err := l.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return err
		}
	}
	return nil
}

// errCorruptIndex marks an index to rebuild.
var errCorruptIndex = errors.New("the index needs a rebuild")

// errOtherVersion marks an index of another schema version: rebuilt too,
// with its own note (setup's) and its roots kept.
var errOtherVersion = fmt.Errorf("an index of another version: %w", errCorruptIndex)

// isCorrupt reports whether err says the index file is damaged or is not
// an index.
func isCorrupt(err error) bool {
	if errors.Is(err, errCorruptIndex) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	// The FTS5 module reports its own damage as a plain SQLITE_ERROR.
	s := err.Error()
	return strings.Contains(s, "malformed") || strings.Contains(s, "not a database")
}

// isUnwritable reports whether err says the index cannot be written where
// it is.
func isUnwritable(err error) bool {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrExist) {
		return true
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return true // ENOTDIR, EROFS, ENOSPC...: no index file there
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
			return true
		}
	}
	return false
}

// withRebuild runs fn; when fn finds the index damaged, the index is
// rebuilt (with a note) and fn runs once more.
func (l *Library) withRebuild(fn func() error) error {
	err := fn()
	if err == nil || !isCorrupt(err) || l.memory {
		return err
	}
	fmt.Fprintf(l.opts.Notes, "tapedeck: the index %s is damaged (%v); rebuilding it from the tapes\n", l.opts.Path, shortErr(err))
	l.keepRoots()
	rerr := l.rebuildFile()
	if rerr == nil {
		rerr = l.restoreRoots()
	}
	if rerr != nil {
		if isUnwritable(rerr) {
			fmt.Fprintf(l.opts.Notes, "tapedeck: note: cannot write the index %s (%v); using an index in memory for this run\n", l.opts.Path, shortErr(rerr))
			if merr := l.openMemory(); merr != nil {
				return merr
			}
			return fn()
		}
		return fmt.Errorf("rebuild the index %s: %w", l.opts.Path, rerr)
	}
	return fn()
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// escapePath makes path safe in a file: URI.
func escapePath(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(path)
}
