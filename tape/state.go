package tape

// The protocol state at a message: what a client and a server had agreed
// and listed as of one message of a tape. A forward scan of the index
// (extended as the tape grows) keeps, per server, the positions of the
// messages that change that state: initialize requests, list answers,
// list_changed notifications, resource (un)subscriptions, and the requests
// that stayed unanswered for long. The state at any message is then a few
// binary searches and the bodies of a handful of messages (cached), so
// asking for it costs the same on a tape of ten messages or a million.

import (
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// pendingWindow is how far back from a message the pending requests are
// looked for message by message; requests answered further away than this
// (or never) are kept in StateIndex.long.
const pendingWindow = 4096

// State is the protocol state of one server as of one message.
type State struct {
	Seq     int    // the message it is the state as of
	Server  string // that message's server
	Session string // its HTTP session (Mcp-Session-Id), if any

	InitAt int // the last handshake request (initialize, or see Discover) at or before Seq, or -1
	// Discover says InitAt is a 2026-07-28 server/discover probe, which the
	// server answered (not rejected as negotiation): that era's handshake,
	// the client's identity in its _meta and the server's in its answer's.
	Discover   bool
	Asked      string // the protocol version the client asked for
	Version    string // the version the server answered, "" if not answered by Seq
	ClientInfo string // "name version"
	ServerInfo string // "name version", "" if not answered by Seq
	ClientCaps []Capability
	ServerCaps []Capability

	Lists         []ListState // the lists listed or changed by Seq, in Lists() order
	Subscriptions []string    // resource URIs subscribed to (and not unsubscribed) by Seq
	Pending       []int       // client requests sent by Seq and neither answered nor cancelled by then, oldest first
	Tasks         []TaskState // the server's tasks created by Seq (see Tasks)
}

// TaskState is one task as of a message.
type TaskState struct {
	Task    Task
	Status  string // the last status reported at or before the message
	Message string // its statusMessage
	Polls   int    // tasks/get sent so far
	Ended   bool   // its terminal status was reported by the message
}

// Capability is one member of a capabilities object and its sub-flags that
// are not false: {"tools":{"listChanged":true}} is {"tools", ["listChanged"]}.
type Capability struct {
	Name  string
	Flags []string
}

// Listing is one list answer's item names (or URIs).
type Listing struct {
	Seq   int
	Names []string
}

// ListState is one list as last listed by a message, and how it changed.
type ListState struct {
	List
	Last           *Listing // the last answer at or before the message, nil if none
	Prev           *Listing // the answer before Last, nil if none
	ChangedBetween int      // a list_changed between Prev and Last (its seq), or -1
	ChangedSince   int      // a list_changed after Last (its seq), or -1
}

// Added returns the names in Last and not in Prev; Removed those in Prev and
// not in Last. Both are empty without a Prev.
func (l ListState) Added() []string {
	if l.Last == nil || l.Prev == nil {
		return nil
	}
	return missing(l.Last.Names, l.Prev.Names)
}

// Removed returns the names in Prev and not in Last.
func (l ListState) Removed() []string {
	if l.Last == nil || l.Prev == nil {
		return nil
	}
	return missing(l.Prev.Names, l.Last.Names)
}

// missing returns the names of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// StateIndex answers the protocol state at any message of an index; it
// follows the index as it grows. It is not safe for concurrent use.
type StateIndex struct {
	x       *Index
	scanned int
	inits   map[string][]int // server → its initialize requests (client → server)
	lists   map[string][]int // server + "\x00" + list method → answers to it
	changed map[string][]int // server + "\x00" + notification → list_changed notifications
	subs    map[string][]int // server → its resources/subscribe and unsubscribe requests
	cancels map[string][]int // server → the client's notifications/cancelled
	long    []int            // requests answered more than pendingWindow messages later, or never
	bodies  map[int][]byte   // message bodies read, by seq
	tasks   []Task           // the tape's tasks, found again when taskN is not the index's Len
	taskN   int
}

// NewStateIndex returns a StateIndex over x.
func NewStateIndex(x *Index) *StateIndex {
	return &StateIndex{x: x, inits: map[string][]int{}, lists: map[string][]int{},
		changed: map[string][]int{}, subs: map[string][]int{}, cancels: map[string][]int{}, bodies: map[int][]byte{}}
}

// StateAt returns the protocol state as of message seq of x. To ask for the
// state at many messages, keep a NewStateIndex.
func StateAt(x *Index, seq int) State { return NewStateIndex(x).At(seq) }

// extend scans the messages indexed since the last call. A request is
// judged long once its answer is known, or when it is still unanswered:
// unanswered requests are looked at again on each extend.
func (s *StateIndex) extend() {
	n := s.x.Len()
	// Requests found unanswered may have been answered since.
	s.long = slices.DeleteFunc(s.long, func(i int) bool {
		p := s.x.Pair(i).Partner
		return p >= 0 && p-i <= pendingWindow
	})
	for i := s.scanned; i < n; i++ {
		e := s.x.Entry(i)
		switch {
		case e.Kind == KindRequest && e.Dir == DirSend:
			switch e.Method {
			case "initialize", MethodDiscover:
				s.inits[e.Server] = append(s.inits[e.Server], i)
			case "resources/subscribe", "resources/unsubscribe":
				s.subs[e.Server] = append(s.subs[e.Server], i)
			}
			if p := s.x.Pair(i).Partner; p < 0 || p-i > pendingWindow {
				s.long = append(s.long, i)
			}
		case e.Kind == KindResponse && e.Dir == DirRecv:
			if l, ok := ListOf(s.x.MethodOf(i)); ok {
				k := e.Server + "\x00" + l.Method
				s.lists[k] = append(s.lists[k], i)
			}
		case e.Kind == KindNotification && strings.HasSuffix(e.Method, "/list_changed"):
			k := e.Server + "\x00" + e.Method
			s.changed[k] = append(s.changed[k], i)
		case e.Kind == KindNotification && e.Dir == DirSend && e.Method == "notifications/cancelled":
			s.cancels[e.Server] = append(s.cancels[e.Server], i)
		}
	}
	slices.Sort(s.long)
	s.scanned = n
	if len(s.bodies) > 256 {
		clear(s.bodies)
	}
}

// raw returns message seq as on the tape, or nil.
func (s *StateIndex) raw(seq int) []byte {
	m, err := s.x.Message(seq)
	if err != nil {
		return nil
	}
	return m.Raw
}

// body returns message seq without its tape metadata.
func (s *StateIndex) body(seq int) []byte {
	if b, ok := s.bodies[seq]; ok {
		return b
	}
	b := StripMeta(s.raw(seq))
	s.bodies[seq] = b
	return b
}

// lastAtOrBefore returns the last of the sorted seqs at or before seq, and
// its index in seqs, or -1, -1.
func lastAtOrBefore(seqs []int, seq int) (int, int) {
	i := sort.SearchInts(seqs, seq+1) - 1
	if i < 0 {
		return -1, -1
	}
	return seqs[i], i
}

// tasksAt returns the tasks of server created at or before seq: the
// status each last reported by then (its creating answer, a status
// notification or a poll's answer), its polls so far.
func (s *StateIndex) tasksAt(server string, seq int) []TaskState {
	if s.taskN != s.x.Len() {
		s.tasks, s.taskN = Tasks(s.x), s.x.Len()
	}
	var out []TaskState
	for _, t := range s.tasks {
		first := t.Create
		if first < 0 {
			first = t.Created
		}
		if t.Server != server || first < 0 || first > seq {
			continue
		}
		ts := TaskState{Task: t, Ended: t.Terminal >= 0 && t.Terminal <= seq}
		reports := append([]int{t.Created}, t.Notes...)
		for _, p := range t.Polls {
			if p <= seq {
				ts.Polls++
			}
			reports = append(reports, s.x.Pair(p).Partner)
		}
		last := -1
		for _, r := range reports {
			if r < 0 || r > seq || r < last {
				continue
			}
			b := s.body(r)
			st := gjson.GetBytes(b, "params")
			if !st.Get("status").Exists() {
				st = gjson.GetBytes(b, "result")
				if st.Get("task").Exists() {
					st = st.Get("task")
				}
			}
			if v := st.Get("status").String(); v != "" {
				last, ts.Status, ts.Message = r, v, st.Get("statusMessage").String()
			}
		}
		if ts.Ended {
			ts.Status = t.Status
		}
		out = append(out, ts)
	}
	return out
}

// At returns the state as of message seq (0 <= seq < the index's Len).
func (s *StateIndex) At(seq int) State {
	s.extend()
	server := s.x.Entry(seq).Server
	st := State{Seq: seq, Server: server, InitAt: -1}
	st.Tasks = s.tasksAt(server, seq)
	if hm := ParseHTTPMeta(s.raw(seq)); hm.HTTP {
		st.Session = hm.Session
		if hm.NewSession != "" {
			st.Session = hm.NewSession
		}
	}
	if init := s.handshake(server, seq); init >= 0 {
		st.InitAt = init
		if s.x.Entry(init).Method == MethodDiscover {
			st.Discover = true
			m := gjson.GetBytes(s.body(init), "params._meta")
			st.Asked = m.Get(`io\.modelcontextprotocol/protocolVersion`).String()
			st.ClientInfo = infoText(m.Get(`io\.modelcontextprotocol/clientInfo`))
			st.ClientCaps = capabilities(m.Get(`io\.modelcontextprotocol/clientCapabilities`))
			if ans := s.x.Pair(init).Partner; ans >= 0 && ans <= seq {
				r := gjson.GetBytes(s.body(ans), "result")
				for _, v := range r.Get("supportedVersions").Array() {
					if v.String() == st.Asked || st.Version == "" {
						st.Version = v.String()
					}
				}
				st.ServerInfo = infoText(r.Get(`_meta.io\.modelcontextprotocol/serverInfo`))
				st.ServerCaps = capabilities(r.Get("capabilities"))
			}
		} else {
			p := gjson.GetBytes(s.body(init), "params")
			st.Asked = p.Get("protocolVersion").String()
			st.ClientInfo = infoText(p.Get("clientInfo"))
			st.ClientCaps = capabilities(p.Get("capabilities"))
			if ans := s.x.Pair(init).Partner; ans >= 0 && ans <= seq {
				r := gjson.GetBytes(s.body(ans), "result")
				st.Version = r.Get("protocolVersion").String()
				st.ServerInfo = infoText(r.Get("serverInfo"))
				st.ServerCaps = capabilities(r.Get("capabilities"))
			}
		}
	}
	for _, l := range Lists() {
		ls := ListState{List: l, ChangedBetween: -1, ChangedSince: -1}
		answers := s.lists[server+"\x00"+l.Method]
		if last, i := lastAtOrBefore(answers, seq); last >= 0 {
			ls.Last = &Listing{Seq: last, Names: s.names(last, l)}
			if i > 0 {
				ls.Prev = &Listing{Seq: answers[i-1], Names: s.names(answers[i-1], l)}
			}
		}
		if c, _ := lastAtOrBefore(s.changed[server+"\x00"+l.Changed], seq); c >= 0 {
			switch {
			case ls.Last != nil && c > ls.Last.Seq:
				ls.ChangedSince = c
			case ls.Last != nil && ls.Prev != nil && c > ls.Prev.Seq:
				ls.ChangedBetween = c
			}
		}
		if ls.Last != nil || ls.ChangedSince >= 0 {
			st.Lists = append(st.Lists, ls)
		}
	}
	st.Subscriptions = s.subscriptionsAt(server, seq)
	st.Pending = s.pendingAt(seq)
	return st
}

// infoText is an Implementation's "name version".
// handshake is the server's last handshake request at or before seq: an
// initialize, or a server/discover probe the server did not reject (a
// rejected one negotiated nothing: Negotiation), or -1.
func (s *StateIndex) handshake(server string, seq int) int {
	inits := s.inits[server]
	for {
		i, k := lastAtOrBefore(inits, seq)
		if i < 0 || s.x.Entry(i).Method != MethodDiscover {
			return i
		}
		if p := s.x.Pair(i).Partner; p < 0 || p > seq || !s.x.Negotiation(p) {
			return i
		}
		inits = inits[:k]
	}
}

func infoText(info gjson.Result) string {
	return strings.TrimSpace(info.Get("name").String() + " " + info.Get("version").String())
}

// capabilities lists a capabilities object's members in their order, each
// with the sub-flags that are not false; nil if it is not an object.
func capabilities(caps gjson.Result) []Capability {
	var out []Capability
	if !caps.IsObject() {
		return nil
	}
	caps.ForEach(func(k, v gjson.Result) bool {
		c := Capability{Name: k.String()}
		if v.IsObject() {
			v.ForEach(func(sk, sv gjson.Result) bool {
				if sv.Type != gjson.False {
					c.Flags = append(c.Flags, sk.String())
				}
				return true
			})
		}
		out = append(out, c)
		return true
	})
	return out
}

// names returns the names (or URIs) of a list answer's items.
func (s *StateIndex) names(seq int, l List) []string {
	var out []string
	for _, it := range gjson.GetBytes(s.body(seq), "result."+l.Member).Array() {
		out = append(out, it.Get(l.Key).String())
	}
	return out
}

// subscriptionsAt returns the resource URIs server's client subscribed to
// by seq: each resources/subscribe and unsubscribe answered with a result
// by then, in the order they were sent.
func (s *StateIndex) subscriptionsAt(server string, seq int) []string {
	var out []string
	for _, i := range s.subs[server] {
		if i > seq {
			break
		}
		p := s.x.Pair(i).Partner
		if p < 0 || p > seq || !gjson.GetBytes(s.body(p), "result").Exists() {
			continue
		}
		uri := gjson.GetBytes(s.body(i), "params.uri").String()
		out = slices.DeleteFunc(out, func(u string) bool { return u == uri })
		if s.x.Entry(i).Method == "resources/subscribe" {
			out = append(out, uri)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// cancelledBy reports whether the client cancelled request i by seq (a
// notifications/cancelled naming its id): it awaits no answer any more.
func (s *StateIndex) cancelledBy(i, seq int) bool {
	if !s.x.Pair(i).Cancelled {
		return false
	}
	id := gjson.GetBytes(s.body(i), "id").Raw
	for _, c := range s.cancels[s.x.Entry(i).Server] {
		if c > seq {
			break
		}
		if c > i && gjson.GetBytes(s.body(c), "params.requestId").Raw == id {
			return true
		}
	}
	return false
}

// pendingAt returns the client requests sent at or before seq and not
// answered (nor cancelled) by then, oldest first.
func (s *StateIndex) pendingAt(seq int) []int {
	var out []int
	for _, i := range s.long {
		if i > seq {
			break
		}
		if p := s.x.Pair(i).Partner; (p < 0 || p > seq) && !s.cancelledBy(i, seq) {
			out = append(out, i)
		}
	}
	for i := max(seq-pendingWindow, 0); i <= seq; i++ {
		e := s.x.Entry(i)
		if e.Kind != KindRequest || e.Dir != DirSend {
			continue
		}
		if p := s.x.Pair(i).Partner; p > seq && p-i <= pendingWindow && !slices.Contains(out, i) && !s.cancelledBy(i, seq) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}
