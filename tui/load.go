package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/fsnotify/fsnotify"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// Indexing runs in the background a chunk at a time, each chunk a tea.Cmd
// whose message asks for the next: the first screen shows as soon as the
// first small chunk is indexed, and a progress bar tracks the rest.
const (
	firstChunk = 1 << 20
	chunkSize  = 32 << 20
	// followPoll is how often follow mode looks at the file even without a
	// notification (some filesystems send none): well under the 200 ms budget.
	followPoll = 100 * time.Millisecond
)

// indexedMsg reports a chunk indexed.
type indexedMsg struct {
	x      *tape.Index
	target int64 // bytes asked for
	total  int64 // bytes to index in all
	final  bool  // the file is complete (not followed)
	err    error
}

// indexCmd indexes x from its size up to the next chunk boundary.
func indexCmd(x *tape.Index, from, total int64, final bool) tea.Cmd {
	return func() tea.Msg {
		step := int64(chunkSize)
		if from == 0 {
			step = firstChunk
		}
		target := min(from+step, total)
		err := x.Extend(target, func() bool { return final && target == total })
		return indexedMsg{x: x, target: target, total: total, final: final, err: err}
	}
}

// followStartedMsg carries the watcher of a followed tape.
type followStartedMsg struct {
	w   *fsnotify.Watcher
	fi  os.FileInfo
	err error
}

// fileChangedMsg says the followed file may have changed.
type fileChangedMsg struct{ w *fsnotify.Watcher }

// reloadedMsg carries a re-opened tape after truncation or replacement.
type reloadedMsg struct {
	x    *tape.Index
	fi   os.FileInfo
	size int64
	err  error
}

// startFollow watches the tape's directory, so that a replaced file (written
// elsewhere and renamed over it) is noticed as well as a growing one.
func startFollow(path string) tea.Cmd {
	return func() tea.Msg {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return followStartedMsg{err: fmt.Errorf("follow %s: %w", path, err)}
		}
		if err := w.Add(filepath.Dir(path)); err != nil {
			w.Close()
			return followStartedMsg{err: fmt.Errorf("follow %s: %w", path, err)}
		}
		fi, err := os.Stat(path)
		return followStartedMsg{w: w, fi: fi, err: err}
	}
}

// waitFile waits for an event on the watched directory or the poll period.
func waitFile(w *fsnotify.Watcher, path string) tea.Cmd {
	return func() tea.Msg {
		t := time.NewTimer(followPoll)
		defer t.Stop()
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return nil // closed: follow ended
				}
				if filepath.Clean(ev.Name) != filepath.Clean(path) {
					continue
				}
			case <-w.Errors:
			case <-t.C:
			}
			return fileChangedMsg{w}
		}
	}
}

// reopen opens path afresh for a reload.
func reopen(path string) tea.Cmd {
	return func() tea.Msg {
		f, err := tape.Open(path)
		if err != nil {
			return reloadedMsg{err: fmt.Errorf("reload %s: %w", path, err)}
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return reloadedMsg{err: fmt.Errorf("reload %s: %w", path, err)}
		}
		return reloadedMsg{x: tape.NewIndex(f), fi: fi, size: fi.Size()}
	}
}

// statsDoneMsg carries stats computed in the background.
type statsDoneMsg struct {
	x        *tape.Index
	n        int
	st       tape.Stats
	warnings []tape.Warning
}

func statsCmd(x *tape.Index) tea.Cmd {
	return func() tea.Msg {
		n := x.Len()
		st := tape.ComputeStats(x, "")
		tape.AddContextCosts(&st, x)
		return statsDoneMsg{x: x, n: n, st: st, warnings: x.Warnings()}
	}
}

// filterDoneMsg carries a filter's matches over the first n messages.
type filterDoneMsg struct {
	gen     int64
	x       *tape.Index
	filter  Filter
	matches []int
	watch   []int // rows whose match may change as the tape grows
	n       int
	grown   bool // an incremental update after the tape grew
}

// filterCmd matches f over x; it gives up when *latest moves past gen
// (a newer query was submitted).
func filterCmd(x *tape.Index, f Filter, gen int64, latest *atomic.Int64) tea.Cmd {
	return func() tea.Msg {
		n := x.Len()
		m, w := matchAll(x, f, n, func() bool { return latest.Load() != gen })
		if m == nil {
			return nil // a newer filter replaced this one
		}
		return filterDoneMsg{gen: gen, x: x, filter: f, matches: m, watch: w, n: n}
	}
}

// filterGrowCmd extends matches, f's matches over x's first from messages,
// to the messages appended since (follow mode): it filters only what may
// have changed, not the whole tape again.
func filterGrowCmd(x *tape.Index, f Filter, matches []int, from int, watch []int, gen int64, latest *atomic.Int64) tea.Cmd {
	return func() tea.Msg {
		n := x.Len()
		m, w := matchGrow(x, f, matches, from, n, watch, func() bool { return latest.Load() != gen })
		if m == nil {
			return nil
		}
		return filterDoneMsg{gen: gen, x: x, filter: f, matches: m, watch: w, n: n, grown: true}
	}
}

// errMsg carries an error to the status bar.
type errMsg struct{ err error }

// infoMsg carries a notice to the status bar.
type infoMsg string

// indexed takes a chunk's result and asks for the next one.
func (m Model) indexed(msg indexedMsg) (tea.Model, tea.Cmd) {
	if msg.x != m.x {
		return m, nil // a tape since replaced
	}
	if msg.err != nil {
		m.load.active = false
		return m, func() tea.Msg { return errMsg{msg.err} }
	}
	// The chunk's Cmd already grew the index: compare with the length the
	// app last saw to know whether the cursor and the position were at the end.
	atEnd := m.timeline.Cursor() >= m.tail.knownLen-1
	wasDelivered := m.player.Position() >= m.tail.knownLen
	m.load.done = msg.target
	m.timeline.SetIndex(m.x)
	var cmds []tea.Cmd
	if msg.target < msg.total {
		cmds = append(cmds, indexCmd(m.x, msg.target, msg.total, msg.final))
	} else {
		m.load.active = false
		if m.opts.Follow && m.opts.Path != "" && m.tail.watcher == nil {
			cmds = append(cmds, startFollow(m.opts.Path))
		}
	}
	if m.opts.Follow {
		if wasDelivered {
			m.player.Seek(m.x.Len())
		}
		if atEnd {
			m.timeline.Select(m.x.Len() - 1)
		}
	}
	m.tail.knownLen = m.x.Len()
	if !m.filter.q.Empty() && !m.load.active {
		cmds = append(cmds, m.growFilter())
	}
	if m.lower == viewStats && !m.load.active {
		cmds = append(cmds, statsCmd(m.x))
	}
	cmds = append(cmds, m.tasksCmd(), m.shadowCmd())
	m.syncPlayback()
	m.placeOnFailure()
	m.showCursor()
	return m, tea.Batch(cmds...)
}

func (m Model) followStarted(msg followStartedMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		return m, func() tea.Msg { return errMsg{msg.err} }
	}
	if m.quitting {
		msg.w.Close()
		return m, nil
	}
	m.tail.watcher, m.tail.info = msg.w, msg.fi
	return m, waitFile(msg.w, m.opts.Path)
}

// fileChanged looks at the followed file: grown (index the rest), shrunk or
// replaced (reload), or unchanged.
func (m Model) fileChanged(msg fileChangedMsg) (tea.Model, tea.Cmd) {
	if msg.w != m.tail.watcher || m.tail.watcher == nil {
		return m, nil
	}
	wait := waitFile(m.tail.watcher, m.opts.Path)
	if m.load.active {
		return m, wait
	}
	fi, err := os.Stat(m.opts.Path)
	if err != nil {
		return m, wait // mid-replacement: look again shortly
	}
	switch {
	case m.tail.info != nil && !os.SameFile(fi, m.tail.info), fi.Size() < m.x.Size():
		m.load.active = true
		return m, reopen(m.opts.Path)
	case fi.Size() > m.x.Size():
		m.load.active = true
		m.load.total = fi.Size()
		return m, tea.Batch(wait, indexCmd(m.x, m.x.Size(), fi.Size(), false))
	}
	return m, wait
}

// reloaded swaps in the re-opened tape, keeping breakpoints and the filter.
func (m Model) reloaded(msg reloadedMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		m.load.active = false
		return m, tea.Batch(waitFile(m.tail.watcher, m.opts.Path), func() tea.Msg { return errMsg{msg.err} })
	}
	old := m.x
	bps := m.player.Breakpoints()
	m.x = msg.x
	m.tail.info = msg.fi
	m.player = debug.NewPlayer(m.x)
	m.player.SetSpeed(1, m.now())
	m.player.SetMaxGap(m.opts.MaxGap)
	var lost []string
	for _, b := range bps {
		if _, err := m.player.AddBreakpoint(b); err != nil {
			lost = append(lost, fmt.Sprintf("%s (%v)", b, err))
		}
	}
	m.timeline.SetIndex(m.x)
	m.timeline.SetMatches(nil)
	m.filter.covered, m.filter.watch = 0, nil
	m.statsN = -1
	m.shadow = shadowState{}
	m.timeline.SetShadowDiffs(nil)
	m.tasksN, m.tasksShown = 0, 0
	m.timeline.SetTasks(nil)
	m.pairing.SetTasks(nil)
	m.load.total = msg.size
	m.tail.knownLen = 0
	old.Close()
	m.notify(true, "the tape was truncated or replaced: reloaded")
	if len(lost) > 0 {
		m.notify(false, "reloaded; breakpoints not kept: "+strings.Join(lost, ", "))
	}
	return m, tea.Batch(waitFile(m.tail.watcher, m.opts.Path), indexCmd(m.x, 0, msg.size, false))
}

func (m Model) statsDone(msg statsDoneMsg) (tea.Model, tea.Cmd) {
	if msg.x != m.x {
		return m, nil
	}
	m.statsN = msg.n
	m.stats.SetStats(msg.st, msg.warnings)
	return m, nil
}
