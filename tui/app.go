package tui

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/fsnotify/fsnotify"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// Options configure the app.
type Options struct {
	// Name is the tape's name in the title bar.
	Name string
	// Path is the tape's file, needed to follow it; empty for a tape in memory.
	Path string
	// Size is how many bytes of the tape to index in the background at start;
	// 0 when the index passed to New is already built.
	Size int64
	// Follow tails a tape still being recorded: new messages appear as they
	// are written, and a truncated or replaced file is reloaded.
	Follow bool
	// Light starts with the light theme, before the terminal reports its
	// background colour.
	Light bool
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
	// Live, when set, is a live client session (tapedeck debug).
	Live debug.Live
	// Intercept, when set, is a live intercept session (tapedeck debug --
	// SERVER): give Path and Follow the tape it records.
	Intercept debug.Intercept
	// Breakpoints are set from the start (open and debug --break).
	Breakpoints []debug.Breakpoint
	// MaxGap cuts recorded pauses longer than it when playing (open and
	// debug --max-gap); 0 plays every gap as recorded.
	MaxGap time.Duration
	// Seq, when SeqSet, opens the tape with the cursor on message Seq
	// instead of the first failure (open TAPE:SEQ, as search names hits);
	// while the tape is indexed in the background, once the message is.
	Seq    int
	SeqSet bool
	// QuitLabel is what the hint bar says q does ("quit" when empty); the
	// sessions view's debugger goes back to the list.
	QuitLabel string
	// CopyDir is where y writes a copy of the message it sends to the
	// clipboard; empty means the system's temporary directory.
	CopyDir string
}

// lowerView is what the lower pane shows.
type lowerView int

const (
	viewMessage lowerView = iota
	viewPair
	viewStats
	viewState
	viewDiff
)

var viewNames = [...]string{"1 message", "2 pairing", "3 stats", "4 state", "diff"}

// focus is which pane has the keyboard.
type focus int

const (
	focusTimeline focus = iota
	focusLower
)

// speeds are the steps of + and -; 0 is instant and comes after the fastest.
var speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 0}

// Model is the debugger: the program's root and its only tea.Model. Build it
// with New and run it with tea.NewProgram.
type Model struct {
	KeyMap KeyMap

	opts   Options
	styles *Styles
	x      *tape.Index
	player *debug.Player
	now    func() time.Time
	tick   func(time.Duration, func(time.Time) tea.Msg) tea.Cmd // tea.Tick; tests fake it

	timeline Timeline
	detail   Detail
	pairing  Pairing
	stats    StatsPane
	state    StatePane
	prompt   Prompt
	help     help.Model
	bar      progress.Model
	bplist   BreakpointList
	diff     DiffView

	width, height int
	focus         focus
	lower         lowerView
	showHelp      bool

	load   loadState
	tail   followState
	filter filterState
	play   playState
	live   liveState
	icpt   interceptState

	statsN      int
	shadow      shadowState
	tasksN      int // the index length the timeline's tasks were (or are being) found at
	tasksShown  int // the index length of the scan whose tasks the timeline shows
	notice      string
	noticeOK    bool
	noticeGen   int      // bumped by each notify: an expiry clears only its own notice
	notices     []notice // the message log (:messages)
	noticeAfter func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
	showLog     bool // the message log is on show
	overlayTop  int  // the first line shown of a scrolling overlay (help, log)
	quitting    bool
	quitConfirm bool // q was pressed with a client connected: q again quits
}

// loadState is the background indexing of the tape at start.
type loadState struct {
	active      bool
	total, done int64 // bytes to index, and indexed so far
	// placed is true once the cursor was put on the first failure, or
	// the user moved it: indexing no longer moves it.
	placed bool
}

// followState is the fsnotify watch of a tape still being recorded.
type followState struct {
	watcher  *fsnotify.Watcher
	info     os.FileInfo
	knownLen int // the index's length when last seen, to follow its end
}

// filterState is the filter and its matches.
type filterState struct {
	q       Filter
	gen     *atomic.Int64 // bumped for each new filter: stale match results are dropped
	covered int           // the messages the current matches cover
	watch   []int         // rows whose match may change as the tape grows
}

// playState is what playback did last: its timer's generation and the
// breakpoint hits.
type playState struct {
	gen     int
	hits    int
	lastHit *debug.BreakpointHit
	// started is false until the user plays, steps or seeks: a tape
	// opened is shown post-mortem, every message as delivered, and only
	// playback dims what lies ahead. A live session starts started.
	started bool
	ask     *breakChoice // b's question on a call, while it waits for m or t
}

// New returns the debugger over x. When opts.Size is set, x is indexed in
// the background from Init on.
func New(x *tape.Index, opts Options) Model {
	s := NewStyles(!opts.Light)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	m := Model{
		KeyMap:      DefaultKeyMap(),
		opts:        opts,
		styles:      s,
		x:           x,
		now:         now,
		tick:        tea.Tick,
		noticeAfter: tea.Tick,
		timeline:    NewTimeline(x, s),
		detail:      NewDetail(s),
		pairing:     NewPairing(s),
		stats:       NewStatsPane(s),
		state:       NewStatePane(s),
		prompt:      NewPrompt(s),
		help:        help.New(),
		bar:         progress.New(progress.WithWidth(24), progress.WithoutPercentage(), progress.WithColors(lipgloss.Color("#58a6ff"))),
		bplist:      NewBreakpointList(s),
		diff:        NewDiffView(s),
		filter:      filterState{gen: new(atomic.Int64)},
		load:        loadState{active: opts.Size > 0, total: opts.Size},
		statsN:      -1,
		tail:        followState{knownLen: x.Len()},
	}
	m.help.Styles = s.Help
	m.player = debug.NewPlayer(x)
	m.player.SetSpeed(1, now())
	m.player.SetMaxGap(opts.MaxGap)
	for _, b := range opts.Breakpoints {
		if _, err := m.player.AddBreakpoint(b); err != nil {
			m.notify(false, fmt.Sprintf("breakpoint %s: %v", b, err))
		}
	}
	if opts.Follow {
		m.player.Seek(x.Len()) // a growing tape is watched, not replayed: all delivered
	}
	m.syncTasks()
	m.timeline.Focus()
	m.live.init(opts.Live)
	m.icpt.s = opts.Intercept
	if opts.Live != nil {
		m.player.SetLimit(0) // nothing plays before the session says how far the client is
		m.play.started = true
	}
	m.syncPlayback()
	m.placeOnFailure()
	return m
}

// placeOnFailure puts the cursor on the tape's first failure, once, when a
// tape is opened post-mortem: the failing call is the first thing seen;
// or on the message Options.Seq names.
func (m *Model) placeOnFailure() {
	if m.load.placed || m.play.started {
		return
	}
	if m.opts.SeqSet {
		switch n := m.x.Len(); {
		case m.opts.Seq < n:
			m.load.placed = true
			m.selectSeq(m.opts.Seq)
		case !m.load.active:
			m.load.placed = true
			m.notify(false, fmt.Sprintf("message %d: the tape has %d messages (0 to %d)", m.opts.Seq, n, n-1))
		}
		return
	}
	if m.opts.Follow {
		return
	}
	if i := m.x.NextFailure(0, 1); i >= 0 {
		m.load.placed = true
		m.selectSeq(i)
	}
}

// Init starts the background work: indexing, the terminal's background
// colour query, following, and the live session.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor}
	if m.load.active {
		cmds = append(cmds, indexCmd(m.x, 0, m.load.total, !m.opts.Follow))
	} else if m.opts.Follow && m.opts.Path != "" {
		cmds = append(cmds, startFollow(m.opts.Path))
	}
	cmds = append(cmds, m.live.initCmd(), m.icpt.nextCmd(), m.shadowCmd())
	if m.icpt.active() {
		if bs := m.player.Breakpoints(); len(bs) > 0 {
			s := m.icpt.s
			cmds = append(cmds, func() tea.Msg { s.SetBreakpoints(bs); return nil })
		}
	}
	return tea.Batch(cmds...)
}

// Update routes a message (see route) and, when it left a new notice,
// adds the command that times the notice out.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	gen := m.noticeGen
	mm, cmd := m.route(msg)
	if md, ok := mm.(Model); ok && md.noticeGen != gen && md.notice != "" {
		return md, tea.Batch(cmd, md.expireNotice())
	}
	return mm, cmd
}

// route routes a message in a fixed order: resize, theme, keys (prompt and
// overlays first, then global keys, then the focused pane), mouse, app
// messages; anything else goes to the focused pane only.
func (m Model) route(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m.resize(msg.Width, msg.Height), nil
	case tea.BackgroundColorMsg:
		return m.setTheme(msg.IsDark()), nil
	case tea.KeyPressMsg:
		mm, cmd := m.handleKey(msg)
		if md, ok := mm.(Model); ok && md.icpt.active() {
			md, sync := md.syncBreakpoints()
			return md, tea.Batch(cmd, sync)
		}
		return mm, cmd
	case tea.MouseClickMsg:
		return m.handleClick(msg.Mouse())
	case tea.MouseWheelMsg:
		return m.handleWheel(msg)
	case indexedMsg:
		return m.indexed(msg)
	case followStartedMsg:
		return m.followStarted(msg)
	case fileChangedMsg:
		return m.fileChanged(msg)
	case reloadedMsg:
		return m.reloaded(msg)
	case statsDoneMsg:
		return m.statsDone(msg)
	case shadowDoneMsg:
		return m.shadowDone(msg)
	case tasksFoundMsg:
		return m.tasksFound(msg), nil
	case filterDoneMsg:
		return m.filterDone(msg)
	case playTickMsg:
		return m.playTick(msg)
	case promptSubmitMsg:
		mm, cmd := m.promptSubmit(msg)
		if md, ok := mm.(Model); ok && md.icpt.active() {
			md, sync := md.syncBreakpoints()
			return md, tea.Batch(cmd, sync)
		}
		return mm, cmd
	case interceptMsg:
		return m.interceptEvent(msg)
	case editedMsg:
		return m.edited(msg)
	case promptCancelMsg:
		return m, nil
	case noticeExpiredMsg:
		return m.noticeExpired(msg)
	case errMsg:
		m.notify(false, msg.err.Error())
		return m, nil
	case infoMsg:
		m.notify(true, string(msg))
		return m, nil
	case liveMsg:
		return m.liveEvent(msg)
	}
	return m.updateFocused(msg)
}

func (m Model) resize(w, h int) Model {
	m.width, m.height = w, h
	th, lh := m.paneHeights()
	m.timeline.SetSize(w, th)
	m.detail.SetSize(w, lh)
	m.pairing.SetSize(w, lh)
	m.stats.SetSize(w, lh)
	m.state.SetSize(w, lh)
	m.diff.SetSize(w, lh)
	m.prompt.SetWidth(w)
	m.help.SetWidth(w - 4)
	m.showCursor()
	return m
}

// paneHeights splits the screen: a title line, the timeline (header and
// rows), the lower pane's title line, the lower pane, the status line, the
// key hint bar.
func (m Model) paneHeights() (timeline, lower int) {
	body := max(m.height-4, 2)
	timeline = max(body*45/100, 3)
	lower = max(body-timeline, 1)
	return timeline, lower
}

func (m Model) setTheme(dark bool) Model {
	if m.styles.Dark == dark {
		return m
	}
	s := NewStyles(dark)
	m.styles = s
	m.timeline.styles = s
	m.detail.SetStyles(s)
	m.pairing.SetStyles(s)
	m.stats.styles = s
	m.state.SetStyles(s)
	if m.stats.stats != nil {
		m.stats.SetStats(*m.stats.stats, m.stats.warnings)
	}
	m.bplist.styles = s
	m.diff.SetStyles(s)
	m.prompt = NewPrompt(s)
	m.prompt.SetWidth(m.width)
	m.help.Styles = s.Help
	return m
}

// handleKey gives the key to the first taker: the open prompt, an overlay,
// a pending divergence's choice, the global keys, then the focused pane.
func (m Model) handleKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.prompt.IsOpen() {
		var cmd tea.Cmd
		m.prompt, cmd = m.prompt.Update(msg)
		return m, cmd
	}
	if m.showHelp || m.showLog {
		return m.overlayKey(msg), nil
	}
	if m.bplist.IsOpen() {
		return m.breakpointListKey(msg)
	}
	if m.play.ask != nil {
		return m.breakChoiceKey(msg), nil
	}
	if m.quitConfirm {
		m.quitConfirm = false
		if key.Matches(msg, m.KeyMap.Quit) {
			return m.quitNow()
		}
		m.notify(true, "still here")
		return m, nil
	}
	if m.live.diverged() {
		if mm, cmd, ok := m.divergenceKey(msg); ok {
			return mm, cmd
		}
	}
	if m.icpt.active() {
		if mm, cmd, ok := m.interceptKey(msg); ok {
			return mm, cmd
		}
	}
	m.notice = ""
	m.load.placed = true // the user leads from here
	k := m.KeyMap
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp, m.overlayTop = true, 0
		return m, nil
	case key.Matches(msg, k.SwitchPane):
		return m.switchPane(), nil
	case key.Matches(msg, k.Play):
		return m.togglePlay()
	case key.Matches(msg, k.StepForward):
		return m.step(1)
	case key.Matches(msg, k.StepBack):
		return m.step(-1)
	case key.Matches(msg, k.NextRequest):
		return m.seekRequest(1), nil
	case key.Matches(msg, k.PrevRequest):
		return m.seekRequest(-1), nil
	case key.Matches(msg, k.SpeedUp):
		return m.changeSpeed(1)
	case key.Matches(msg, k.SpeedDown):
		return m.changeSpeed(-1)
	case key.Matches(msg, k.Breakpoint):
		return m.toggleBreakpoint(), nil
	case key.Matches(msg, k.Breakpoints):
		m.bplist.Open(m.player.Breakpoints())
		return m, nil
	case key.Matches(msg, k.Search):
		// A new filter starts empty (typing does not append to the old
		// one); the placeholder shows the one in force.
		return m, m.prompt.OpenFilter(m.filter.q.Query)
	case key.Matches(msg, k.Command):
		return m, m.prompt.Open(promptCommand, "")
	case key.Matches(msg, k.NextMatch):
		return m.nextMatch(1), nil
	case key.Matches(msg, k.PrevMatch):
		return m.nextMatch(-1), nil
	case key.Matches(msg, k.Restart):
		return m.restart()
	case key.Matches(msg, k.NextFailure):
		return m.jumpFailure(1), nil
	case key.Matches(msg, k.PrevFailure):
		return m.jumpFailure(-1), nil
	case key.Matches(msg, k.OnlyMatches):
		return m.toggleOnlyMatches(), nil
	case key.Matches(msg, k.Tasks):
		return m.toggleTasks(), nil
	case key.Matches(msg, k.Partner):
		return m.jumpPartner(), nil
	case key.Matches(msg, k.Link):
		return m.followLink(), nil
	case key.Matches(msg, k.Copy):
		return m.copyMessage()
	case key.Matches(msg, k.ViewMessage):
		return m.setLower(viewMessage)
	case key.Matches(msg, k.ViewPair):
		return m.setLower(viewPair)
	case key.Matches(msg, k.ViewStats):
		return m.setLower(viewStats)
	case key.Matches(msg, k.ViewState):
		return m.setLower(viewState)
	case key.Matches(msg, k.Escape):
		return m.clearFilter(), nil
	}
	if m.focus == focusTimeline && key.Matches(msg, m.timeline.KeyMap.Open) {
		return m.switchPane(), nil
	}
	return m.updateFocused(msg)
}

// updateFocused gives msg to the focused pane only.
func (m Model) updateFocused(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	if m.focus == focusTimeline {
		before := m.timeline.Cursor()
		m.timeline, cmd = m.timeline.Update(msg)
		if m.timeline.Cursor() != before {
			m.showCursor()
		}
		return m, cmd
	}
	return m.updateLower(msg)
}

// updateLower hands msg to the lower pane on show.
func (m Model) updateLower(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch m.lower {
	case viewMessage:
		m.detail, cmd = m.detail.Update(msg)
	case viewPair:
		m.pairing, cmd = m.pairing.Update(msg)
	case viewStats:
		m.stats, cmd = m.stats.Update(msg)
	case viewState:
		m.state, cmd = m.state.Update(msg)
	case viewDiff:
		m.diff, cmd = m.diff.Update(msg)
	}
	return m, cmd
}

// quit asks first when a live client is connected or held: quitting cuts
// it off.
func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.live.active() && m.live.client == clientConnected {
		m.quitConfirm = true
		m.notify(false, "a client is connected and loses its session if you quit: q again quits, any other key stays")
		return m, nil
	}
	return m.quitNow()
}

// restart plays the tape from the top: in a debug session it ends the
// client run, so the next client starts a new one.
func (m Model) restart() (tea.Model, tea.Cmd) {
	if m.live.active() {
		m.notify(true, fmt.Sprintf("restarting: run %d ends, the next client starts from the top", max(m.live.run, 1)))
		return m, m.live.restartCmd()
	}
	m.player.Pause(m.now())
	m.play.gen++
	m.player.Seek(0)
	m.play.started = true
	m.play.lastHit = nil
	m.timeline.SetHit(-1)
	m.selectSeq(0)
	m.syncPlayback()
	m.notify(true, "back at the top: space plays")
	return m, nil
}

func (m Model) quitNow() (tea.Model, tea.Cmd) {
	m.quitting = true
	if m.tail.watcher != nil {
		m.tail.watcher.Close()
		m.tail.watcher = nil
	}
	return m, tea.Batch(m.live.closeCmd(), tea.Quit)
}

func (m Model) switchPane() Model {
	if m.focus == focusTimeline {
		m.focus = focusLower
		m.timeline.Blur()
		m.detail.Focus()
		m.pairing.Focus()
		m.stats.Focus()
		m.state.Focus()
		m.diff.Focus()
	} else {
		m.focus = focusTimeline
		m.timeline.Focus()
		m.detail.Blur()
		m.pairing.Blur()
		m.stats.Blur()
		m.state.Blur()
		m.diff.Blur()
	}
	return m
}

func (m Model) setLower(v lowerView) (tea.Model, tea.Cmd) {
	m.lower = v
	if v == viewStats && m.statsN != m.x.Len() {
		return m, statsCmd(m.x)
	}
	m.showCursor()
	return m, nil
}

// showCursor points the lower panes at the message under the cursor.
func (m *Model) showCursor() {
	seq := m.timeline.Cursor()
	switch m.lower {
	case viewMessage:
		m.detail.Show(m.x, seq)
	case viewPair:
		m.pairing.Show(m.x, seq)
	case viewState:
		m.state.Show(m.x, seq)
	}
}

// selectSeq moves the cursor to seq and shows it.
func (m *Model) selectSeq(seq int) {
	m.timeline.Select(seq)
	m.showCursor()
}

func (m Model) handleClick(ms tea.Mouse) (tea.Model, tea.Cmd) {
	th, _ := m.paneHeights()
	y := ms.Y - 1 // below the title line
	if ms.Button == tea.MouseLeft && y >= 0 && y < th {
		if m.timeline.ClickRow(y) {
			if m.focus != focusTimeline {
				m = m.switchPane()
			}
			m.showCursor()
		}
	} else if ms.Button == tea.MouseLeft && y > th && m.focus != focusLower {
		m = m.switchPane()
	}
	return m, nil
}

func (m Model) handleWheel(msg tea.MouseWheelMsg) (tea.Model, tea.Cmd) {
	th, _ := m.paneHeights()
	y := msg.Mouse().Y - 1
	if y < th {
		m.timeline, _ = m.timeline.Update(msg)
		m.showCursor()
		return m, nil
	}
	return m.updateLower(msg)
}
