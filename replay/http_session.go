package replay

// Live HTTP sessions: each is claimed by a client's first message (or its
// initialize), replays one recorded session with its own Engine, and ends
// with DELETE or when the handler closes.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/text"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/tape"
)

// session is one live session and the engine replaying its recorded one.
type session struct {
	id      string
	e       *Engine
	version string // the protocol version the initialize asked for
	pending map[tape.ID]*exchange
	open    []*exchange // request exchanges not yet answered, oldest first
	get     *stream     // the standalone stream, once needed
	streams map[int]*stream
	nstream int
	retired []int    // finished streams still kept, oldest first
	held    [][]byte // server messages waiting for a stream to open
	wire    map[int]wireInfo
	ended   bool
}

func newSession(e *Engine) *session {
	return &session{e: e, pending: map[tape.ID]*exchange{}, streams: map[int]*stream{}, wire: map[int]wireInfo{}}
}

// claim starts the session replaying the next recorded one; nil when all
// were served. The caller holds the lock.
func (h *HTTPHandler) claim() *session {
	i := len(h.all)
	if i >= len(h.spans) {
		return nil
	}
	e := h.first
	if i > 0 {
		e = h.engine(i)
	}
	s := newSession(e)
	// The id is chosen now, though issued only with the initialize answer,
	// so that a divergence before it (a probe) names its session already.
	s.id = h.newSessionID()
	h.all = append(h.all, s)
	return s
}

// sessionFor finds the session a message belongs to, applying the session
// rules; it writes the error and returns nil when they fail. initialize
// opens a new session (id is the JSON-RPC id, for the refusal).
func (h *HTTPHandler) sessionFor(w http.ResponseWriter, r *http.Request, initialize bool, id tape.ID) *session {
	if !h.sessions {
		return h.lone
	}
	sid := r.Header.Get(mcphttp.HeaderSession)
	h.mu.Lock()
	defer h.unlock()
	if initialize {
		s := h.fresh
		if s == nil {
			s = h.claim()
		}
		if s == nil {
			h.refuse(w, id)
			return nil
		}
		h.fresh = nil
		h.byID[s.id] = s
		h.issued = true
		return s
	}
	if sid == "" {
		// Traffic before initialize (a server/discover probe) belongs to
		// the next recorded session, when it recorded some or before any
		// session was issued; else the session header is missing.
		if h.fresh == nil && (!h.issued || len(h.all) < len(h.spans) && h.preInit[len(h.all)]) {
			h.fresh = h.claim()
		}
		if h.fresh != nil {
			return h.fresh
		}
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header: expected the session id the initialize answer gave", http.StatusBadRequest)
		return nil
	}
	s := h.byID[sid]
	if s == nil {
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found: initialize again", sid), http.StatusNotFound)
		return nil
	}
	return s
}

// refuse answers an initialize beyond the recorded sessions; the caller
// holds the lock.
func (h *HTTPHandler) refuse(w http.ResponseWriter, id tape.ID) {
	n := len(h.spans)
	d := Divergence{
		Server: h.server, Reason: ReasonBeyondEnd, Method: "initialize", RequestID: json.RawMessage(id),
		Expected: -1, Resolution: SendError,
		Message: fmt.Sprintf("replay mismatch for server '%s': initialize would open session %d, but the tape recorded %s; each recorded session is served once, in order: restart the replay to serve them again", h.server, len(h.all)+1, text.Plural(n, "session")),
	}
	h.refused = append(h.refused, d)
	h.notify(func() { h.opts.OnDivergence(d) }, h.opts.OnDivergence != nil)
	data, _ := json.Marshal(d)
	writeJSON(w, http.StatusConflict, jsonrpc.ErrorResponse([]byte(id), CodeDiverged, d.Message, data))
}

func (h *HTTPHandler) newSessionID() string {
	if h.opts.NewSessionID != nil {
		return h.opts.NewSessionID()
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// endStreams ends the session's standalone stream; the caller holds the lock.
func (h *HTTPHandler) endStreams(sess *session) {
	if sess.get != nil {
		sess.get.finish()
	}
}

func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	if !h.sessions {
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no sessions to delete", http.StatusMethodNotAllowed)
		return
	}
	sid := r.Header.Get(mcphttp.HeaderSession)
	if sid == "" {
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header on DELETE", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.unlock()
	sess := h.byID[sid]
	if sess == nil {
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found", sid), http.StatusNotFound)
		return
	}
	delete(h.byID, sid)
	sess.ended = true
	h.endStreams(sess)
	w.WriteHeader(http.StatusOK)
}
