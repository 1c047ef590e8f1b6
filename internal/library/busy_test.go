package library

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenLockedTooLong: an index another connection keeps locked past the
// busy timeout fails to open with an error that says what tapedeck waited
// for and what it found, not SQLite's "database is locked" alone.
func TestOpenLockedTooLong(t *testing.T) {
	defer func(d time.Duration) { openBusyFor = d }(openBusyFor)
	openBusyFor = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "index.db")
	l, err := Open(Options{Path: path, DefaultDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	start := time.Now()
	l, err = Open(Options{Path: path, DefaultDir: t.TempDir()})
	if err == nil {
		l.Close()
		t.Fatal("expected the open of a locked index to fail, it succeeded")
	}
	took := time.Since(start)
	msg := err.Error()
	if !strings.Contains(msg, "expected another process's lock on it to end within 300ms") ||
		!strings.Contains(msg, "still held") || !strings.Contains(msg, "database is locked") {
		t.Errorf("expected an error saying the lock outlasted the 300ms wait (SQLite's own words kept), found %q", msg)
	}
	if took < openBusyFor || took > 10*openBusyFor+5*time.Second {
		t.Errorf("expected the open to give up after about %s, it took %s", openBusyFor, took)
	}
}
