package tui

// The sessions view: the tapes of the library, newest first, and a search
// of the messages across them. Bare "tapedeck" opens it when the library
// holds tapes. It is a tea.Model of its own that knows nothing of the
// library's index: the caller fills SessionRow values and a SessionSearch
// function, and reads the user's pick with Choice once the program ends
// (a tape, a message of a tape, or the demo), then runs the debugger on it.

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/text"
)

// SessionRow is a tape of the library, as the sessions view lists it.
type SessionRow struct {
	// Path is the tape's file, as Choice returns it; Show is how it is
	// written on screen (the home directory as ~), Path when empty.
	Path, Show string
	// Start is the first message's time; zero when the tape has none.
	Start    time.Time
	Duration time.Duration
	Servers  []string
	// Client is the client's name and version from initialize.
	Client string
	Calls  int
	// RPCErrors are JSON-RPC errors, ToolErrors results with isError.
	RPCErrors, ToolErrors int
	// Recording says the tape is still being written.
	Recording bool
}

// SessionHit is a message a search across the library found.
type SessionHit struct {
	// Path is the tape's file, Show how it is written (Path when empty).
	Path, Show string
	Seq        int
	Time       time.Time
	Kind       string // request, response, notification, ...
	Method     string
	Target     string // the tool, prompt or resource a call names
	Status     string // the state of the exchange: ok, error, tool-error, ...
	Snippet    string // the text around the match
}

// SessionSearch runs the search line's query (tapedeck search's words,
// with its filters as tool:NAME, method:M, status:S, since:D) over the
// library. It runs in a tea.Cmd, off the UI's goroutine.
type SessionSearch func(query string) ([]SessionHit, error)

// IndexProgress is how far the library's refresh has read the tapes it
// indexes.
type IndexProgress struct {
	Tapes       int   // tapes being indexed
	Read, Total int64 // bytes of them read, and to read
}

// SessionsOptions configure the sessions view.
type SessionsOptions struct {
	Rows   []SessionRow // newest first
	Search SessionSearch
	// Refresh, when set, brings the library up to date with the tapes on
	// disk and returns its rows anew: the view starts at once on Rows
	// (what the index held), runs Refresh in a tea.Cmd each time the
	// program starts, and swaps its rows in when it returns.
	Refresh func() ([]SessionRow, error)
	// Indexing reports how far Refresh has read the tapes it indexes
	// (false while it reads none); polled for the progress line while
	// Refresh runs.
	Indexing func() (IndexProgress, bool)
	// AfterRefresh, when set, runs in a tea.Cmd once Refresh has brought
	// the rows in (not after a failed one): work the view does not wait
	// for, such as indexing the text a search needs.
	AfterRefresh func()
	// EmptyDemo ends the view with the demo picked (SessionChoice.Empty)
	// when Refresh finds no tape in the library. Resume clears it.
	EmptyDemo bool
	// Light starts with the light theme, before the terminal reports its
	// background colour.
	Light bool
}

// SessionChoice is what the user picked: a tape (at message Seq when
// SeqSet, a search hit), or the embedded demo.
type SessionChoice struct {
	Path   string
	Seq    int
	SeqSet bool
	Demo   bool
	// Empty says the view picked the demo itself: the library holds no
	// tape (SessionsOptions.EmptyDemo).
	Empty bool
}

// SessionsKeyMap is the sessions view's keys.
type SessionsKeyMap struct {
	Up, Down, PageUp, PageDown, First, Last key.Binding
	Open, Search, Back, Demo, Help, Quit    key.Binding
}

// DefaultSessionsKeyMap returns the sessions view's keys.
func DefaultSessionsKeyMap() SessionsKeyMap {
	return SessionsKeyMap{
		Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		First:    key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first")),
		Last:     key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open in the debugger")),
		Search:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search every tape")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back to the tapes")),
		Demo:     key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "the demo tape")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "keys")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp implements help.KeyMap.
func (k SessionsKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.Search, k.Demo, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (k SessionsKeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.First, k.Last},
		{k.Open, k.Search, k.Back, k.Demo, k.Help, k.Quit},
	}
}

// sessionHitsMsg is a finished search.
type sessionHitsMsg struct {
	n     int // which search: only the latest one counts
	query string
	hits  []SessionHit
	err   error
}

// sessionsRefreshedMsg is a finished refresh of the library.
type sessionsRefreshedMsg struct {
	rows []SessionRow
	err  error
}

// sessionsTickMsg polls the refresh's progress.
type sessionsTickMsg struct{}

// indexingEvery is how often the progress line is brought up to date.
const indexingEvery = 250 * time.Millisecond

// Sessions is the sessions view's model. Build it with NewSessions, run it
// with tea.NewProgram, and read Choice from the model the program returns.
type Sessions struct {
	KeyMap SessionsKeyMap

	opts   SessionsOptions
	styles *Styles
	rows   []SessionRow

	// The search: its line, the query it ran, its hits (shown while
	// inHits), and which search is in flight.
	input     textinput.Model
	prompting bool
	query     string
	hits      []SessionHit
	inHits    bool
	searchN   int
	searching bool

	// The refresh of the library while it runs: how far it has read.
	refreshing bool
	indexing   IndexProgress
	indexingOK bool

	cursor, offset       int // in the list on show
	tapeCursor, tapeOffs int // the table's, kept while hits show

	width, height int
	showHelp      bool
	notice        string
	noticeErr     bool
	choice        *SessionChoice
}

// NewSessions returns the sessions view on opts.Rows.
func NewSessions(opts SessionsOptions) Sessions {
	s := NewStyles(!opts.Light)
	in := textinput.New()
	st := textinput.DefaultStyles(s.Dark)
	st.Cursor.Blink = false
	st.Focused.Prompt = s.Status.Prompt
	in.SetStyles(st)
	in.Prompt = "/"
	in.Placeholder = `words "a phrase" prefix* a OR b  tool:NAME method:M status:error since:7d`
	return Sessions{KeyMap: DefaultSessionsKeyMap(), opts: opts, styles: s, rows: opts.Rows, input: in, refreshing: opts.Refresh != nil}
}

// Choice is what the user picked, once the program ended; false when the
// user quit.
func (m Sessions) Choice() (SessionChoice, bool) {
	if m.choice == nil {
		return SessionChoice{}, false
	}
	return *m.choice, true
}

// Rows are the tapes the view lists.
func (m Sessions) Rows() []SessionRow { return m.rows }

// Resume returns the view as it was before the pick, with rows (the
// library again, after the debugger ran) and the cursor on the same tape,
// ready to run again (with its refresh, when it has one). A note, when
// given, shows in the status line (why a tape did not open).
func (m Sessions) Resume(rows []SessionRow, note string) Sessions {
	m = m.withRows(rows)
	m.choice = nil
	m.opts.EmptyDemo = false
	m.refreshing, m.indexingOK = m.opts.Refresh != nil, false
	m.notice, m.noticeErr = note, note != ""
	return m
}

// withRows puts rows in the table, the cursor on the tape it was on.
func (m Sessions) withRows(rows []SessionRow) Sessions {
	path := ""
	if len(m.rows) > 0 {
		i := m.tapeCursor
		if !m.inHits {
			i = m.cursor
		}
		if i >= 0 && i < len(m.rows) {
			path = m.rows[i].Path
		}
	}
	m.rows = rows
	cur := 0
	for i, r := range rows {
		if r.Path == path {
			cur = i
		}
	}
	if m.inHits {
		m.tapeCursor = cur
	} else {
		m.cursor = cur
	}
	return m.clamp()
}

// Init asks the terminal for its background colour, and starts the
// refresh of the library with the ticks of its progress line.
func (m Sessions) Init() tea.Cmd {
	if !m.refreshing {
		return tea.RequestBackgroundColor
	}
	refresh := m.opts.Refresh
	return tea.Batch(tea.RequestBackgroundColor, func() tea.Msg {
		rows, err := refresh()
		return sessionsRefreshedMsg{rows: rows, err: err}
	}, indexingTick())
}

func indexingTick() tea.Cmd {
	return tea.Tick(indexingEvery, func(time.Time) tea.Msg { return sessionsTickMsg{} })
}

// Update handles the keys, the window's size, the theme and finished
// searches.
func (m Sessions) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.SetWidth(max(msg.Width-2, 1))
		return m.clamp(), nil
	case tea.BackgroundColorMsg:
		if dark := msg.IsDark(); dark != m.styles.Dark {
			m.styles = NewStyles(dark)
		}
		return m, nil
	case sessionsTickMsg:
		if !m.refreshing {
			return m, nil
		}
		if m.opts.Indexing != nil {
			m.indexing, m.indexingOK = m.opts.Indexing()
		}
		return m.clamp(), indexingTick()
	case sessionsRefreshedMsg:
		m.refreshing, m.indexingOK = false, false
		if msg.err != nil {
			m.notice, m.noticeErr = "the library could not be brought up to date: "+msg.err.Error(), true
			return m.clamp(), nil
		}
		m = m.withRows(msg.rows)
		if len(m.rows) == 0 && m.opts.EmptyDemo {
			m.choice = &SessionChoice{Demo: true, Empty: true}
			return m, tea.Quit
		}
		if after := m.opts.AfterRefresh; after != nil {
			return m, func() tea.Msg { after(); return nil }
		}
		return m, nil
	case sessionHitsMsg:
		if msg.n != m.searchN {
			return m, nil // an older search
		}
		m.searching = false
		if msg.err != nil {
			m.notice, m.noticeErr = msg.err.Error(), true
			return m, nil
		}
		if !m.inHits {
			m.tapeCursor, m.tapeOffs = m.cursor, m.offset
		}
		m.query, m.hits, m.inHits = msg.query, msg.hits, true
		m.cursor, m.offset = 0, 0
		m.notice, m.noticeErr = "", false
		if len(msg.hits) == 0 {
			m.notice = "no message matches"
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	if m.prompting {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m Sessions) handleKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	km := m.KeyMap
	if m.showHelp {
		m.showHelp = false
		return m, nil
	}
	if m.prompting {
		switch k.String() {
		case "enter":
			m.prompting = false
			m.input.Blur()
			return m.search(m.input.Value())
		case "esc":
			m.prompting = false
			m.input.Blur()
			return m, nil
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		return m, cmd
	}
	m.notice, m.noticeErr = "", false
	n := m.listLen()
	switch {
	case key.Matches(k, km.Quit):
		return m, tea.Quit
	case key.Matches(k, km.Help):
		m.showHelp = true
	case key.Matches(k, km.Up):
		m.cursor--
	case key.Matches(k, km.Down):
		m.cursor++
	case key.Matches(k, km.PageUp):
		m.cursor -= max(m.bodyHeight()-1, 1)
	case key.Matches(k, km.PageDown):
		m.cursor += max(m.bodyHeight()-1, 1)
	case key.Matches(k, km.First):
		m.cursor = 0
	case key.Matches(k, km.Last):
		m.cursor = n - 1
	case key.Matches(k, km.Open):
		return m.open()
	case key.Matches(k, km.Search):
		if m.opts.Search == nil {
			m.notice, m.noticeErr = "search is not available here", true
			return m, nil
		}
		m.prompting = true
		m.input.SetValue(m.query)
		m.input.CursorEnd()
		return m, m.input.Focus()
	case key.Matches(k, km.Back):
		if m.inHits {
			m.inHits = false
			m.cursor, m.offset = m.tapeCursor, m.tapeOffs
		}
	case key.Matches(k, km.Demo):
		m.choice = &SessionChoice{Demo: true}
		return m, tea.Quit
	}
	return m.clamp(), nil
}

// search starts the query in a tea.Cmd; the hits come as a sessionHitsMsg.
func (m Sessions) search(q string) (tea.Model, tea.Cmd) {
	if strings.TrimSpace(q) == "" {
		m.notice, m.noticeErr = "type words to look for, or a filter (tool:NAME method:M status:error since:7d)", true
		return m, nil
	}
	m.searchN++
	m.searching = true
	m.notice, m.noticeErr = fmt.Sprintf("searching for %s…", q), false
	if m.refreshing {
		m.notice += " (once the tapes being indexed are in)"
	}
	n, search := m.searchN, m.opts.Search
	return m, func() tea.Msg {
		hits, err := search(q)
		return sessionHitsMsg{n: n, query: q, hits: hits, err: err}
	}
}

// open picks the row under the cursor and ends the program.
func (m Sessions) open() (tea.Model, tea.Cmd) {
	switch {
	case m.inHits && m.cursor < len(m.hits):
		h := m.hits[m.cursor]
		m.choice = &SessionChoice{Path: h.Path, Seq: h.Seq, SeqSet: true}
	case !m.inHits && m.cursor < len(m.rows):
		m.choice = &SessionChoice{Path: m.rows[m.cursor].Path}
	default:
		return m, nil
	}
	return m, tea.Quit
}

func (m Sessions) listLen() int {
	if m.inHits {
		return len(m.hits)
	}
	return len(m.rows)
}

// bodyHeight is how many rows the list shows: the screen less the title,
// the header, the progress line while there is one, the status line and
// the key line.
func (m Sessions) bodyHeight() int {
	if m.progressLine() != "" {
		return max(m.height-5, 1)
	}
	return max(m.height-4, 1)
}

// progressLine says how far the refresh of the library has read the tapes
// it indexes; empty when it reads none, or when it is done.
func (m Sessions) progressLine() string {
	switch {
	case !m.refreshing:
		return ""
	case m.indexingOK:
		p := m.indexing
		unit := func(n int64) string {
			if p.Total >= 10e6 {
				return fmt.Sprintf("%.0f", float64(n)/1e6)
			}
			return fmt.Sprintf("%.1f", float64(n)/1e6)
		}
		return fmt.Sprintf("indexing %s: %s of %s MB", text.Plural(p.Tapes, "tape"), unit(p.Read), unit(p.Total))
	case len(m.rows) == 0:
		return "looking for tapes…"
	}
	return ""
}

// clamp keeps the cursor in the list and on screen.
func (m Sessions) clamp() Sessions {
	n := m.listLen()
	m.cursor = max(min(m.cursor, n-1), 0)
	h := m.bodyHeight()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
	m.offset = max(min(m.offset, n-h), 0)
	return m
}

// View draws the screen.
func (m Sessions) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "tapedeck — library"
	if m.width == 0 || m.height == 0 {
		v.SetContent("")
		return v
	}
	v.SetContent(m.render())
	return v
}

// render is the screen as a string; View wraps it and tests snapshot it.
func (m Sessions) render() string {
	var header string
	var lines []string
	if m.inHits {
		header, lines = m.hitLines()
	} else {
		header, lines = m.tapeLines()
	}
	h := m.bodyHeight()
	end := min(m.offset+h, len(lines))
	body := strings.Join(lines[min(m.offset, end):end], "\n")
	parts := []string{
		m.titleView(),
		padANSI(m.styles.Timeline.Header.Render(header), m.width),
		fitHeight(body, h, m.width),
	}
	if p := m.progressLine(); p != "" {
		parts = append(parts, padANSI(m.styles.Status.Info.Render(p), m.width))
	}
	parts = append(parts,
		m.statusView(),
		m.keyLine())
	screen := strings.Join(parts, "\n")
	if m.showHelp {
		lines := strings.Split(overlay(screen, m.helpView(), m.width, m.height), "\n")
		for i := range lines {
			lines[i] = padANSI(lines[i], m.width)
		}
		screen = strings.Join(lines, "\n")
	}
	return screen
}

func (m Sessions) titleView() string {
	s := m.styles
	sub := "library · " + text.Plural(len(m.rows), "tape") + " · newest first"
	if m.inHits {
		sub = fmt.Sprintf("search %s · %s · newest first", safeLine(m.query), text.Plural(len(m.hits), "hit"))
	}
	return padANSI(s.App.Title.Render("tapedeck")+" "+s.App.Subtitle.Render(sub), m.width)
}

// statusView says what the row under the cursor is, or the latest notice.
func (m Sessions) statusView() string {
	s := m.styles
	if m.notice != "" {
		st := s.Status.Info
		if m.noticeErr {
			st = s.Status.Alert
		}
		return padANSI(st.Render(safeLine(m.notice)), m.width)
	}
	var line string
	switch {
	case m.inHits && m.cursor < len(m.hits):
		h := m.hits[m.cursor]
		line = fmt.Sprintf("%s:%d", show(h.Path, h.Show), h.Seq)
		if !h.Time.IsZero() {
			line += " · " + h.Time.Local().Format("2006-01-02 15:04:05")
		}
		if st := h.Status; st != "" {
			line += " · " + st
		}
		line += " · esc back to the tapes"
	case !m.inHits && m.cursor < len(m.rows):
		r := m.rows[m.cursor]
		line = show(r.Path, r.Show)
		if r.Client != "" {
			line += " · " + r.Client
		}
		if r.Recording {
			line += " · still being recorded"
		}
	}
	// The path's end is what tells tapes apart: cut from the left.
	return padANSI(s.Status.Info.Render(cutLeft(safeLine(line), max(m.width-2, 1))), m.width)
}

// keyLine is the search line while it is open, else the keys that matter.
func (m Sessions) keyLine() string {
	if m.prompting {
		return padANSI(m.input.View(), m.width)
	}
	hints := [][2]string{{"enter", "open"}, {"/", "search"}, {"d", "demo"}, {"j/k", "move"}, {"?", "keys"}, {"q", "quit"}}
	if m.inHits {
		hints = [][2]string{{"enter", "open at the message"}, {"esc", "tapes"}, {"/", "search"}, {"d", "demo"}, {"?", "keys"}, {"q", "quit"}}
	}
	return hintLine(m.styles, hints, m.width)
}

// helpView is the key overlay, with the search's syntax.
func (m Sessions) helpView() string {
	st := m.styles.Help
	var lines []string
	for _, g := range m.KeyMap.FullHelp() {
		for _, b := range g {
			lines = append(lines, st.FullKey.Render(pad(b.Help().Key, 6))+st.FullDesc.Render(b.Help().Desc))
		}
	}
	lines = append(lines, "", st.FullKey.Render(pad(strings.TrimSpace(recordingMark), 6))+st.FullDesc.Render("a tape still being recorded"))
	inner := max(min(m.width-6, 64), 20)
	note := ansi.Wordwrap(`search: words (all of them, any case), "a phrase", prefix*, a OR b, as tapedeck search takes them, and its flags as tool:NAME method:M status:S (ok, error, tool-error, ...) since:D (24h, 7d, 2026-01-31).`, inner, " ")
	head := m.styles.App.Title.Render("keys") + "  " + m.styles.App.Subtitle.Render("(any key closes)")
	body := head + "\n\n" + strings.Join(lines, "\n") + "\n\n" + m.styles.App.Subtitle.Render(note)
	if lipgloss.Height(body)+2 > m.height {
		body = head + "\n\n" + strings.Join(lines, "\n")
	}
	return m.styles.App.Overlay.Render(body)
}
