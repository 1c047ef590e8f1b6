package tape

// Pairing
//
// The pairer links each request with its response as the index grows, one
// message at a time, by (server, request direction, connection, id): the
// client's and the server's id spaces never collide, and a connection is
// one server's span between two $transport/start records, or one HTTP
// session. Duplicate ids pair first in, first out; a response recorded
// before its request is paired and flagged Reordered;
// notifications/cancelled marks its request Cancelled and a later response
// Late; a 2026-07-28 retry carrying inputResponses links to the
// input_required result it answers (Pair.ChainPrev, Index.Chain); an answer
// with id null to a request the server could not read pairs through
// _meta.inReplyTo, or, on a tape recorded before the proxy wrote it, when
// it is an error with an HTTP 4xx or 5xx status and the client's last
// message on its connection was a request still unanswered, not in a batch
// (the request its POST carried). A $http/exchange record with
// _meta.inReplyTo (a 401 or 403 challenge) answers the request it names.

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"time"
)

// pairKey is a request's pairing key: (server, direction, connection) and
// a hash of its id's JSON text, folded into one word (pairer.key), so that
// the pairing maps hash a uint64 rather than a padded struct.
type pairKey uint64

// sentReq is a client request and its pairing key (ok: there is one).
type sentReq struct {
	key pairKey
	seq int32
	ok  bool
}

type chainKey struct {
	server uint16
	conn   uint32
	method uint32
}

// pairer holds the pairing state of an Index; the index's lock guards it.
type pairer struct {
	pending   map[pairKey]int32   // requests awaiting their response
	queued    map[pairKey][]int32 // more requests with a pending request's id, first in first out
	cancelled map[pairKey]int32   // cancelled requests awaiting a late response
	orphans   map[pairKey]int32   // responses that came before any request
	inputReq  map[chainKey]int32
	chains    map[int32]int32  // retry request → input_required response it answers
	exch      map[int32]uint64 // unanswered requests of session-less POSTs → exchangeOf
	lastSent  []sentReq        // by connection: the client's last message there, if a request
	seed      maphash.Seed
}

func newPairer() pairer {
	return pairer{
		pending:   map[pairKey]int32{},
		queued:    map[pairKey][]int32{},
		cancelled: map[pairKey]int32{},
		orphans:   map[pairKey]int32{},
		inputReq:  map[chainKey]int32{},
		chains:    map[int32]int32{},
		exch:      map[int32]uint64{},
		seed:      maphash.MakeSeed(),
	}
}

// add pairs message seq, just pushed to recs (classified as m, from line
// lineNo), with what came before it.
func (p *pairer) add(recs *recTable, warnings *warningList, seq int32, m *msgInfo, line []byte, lineNo int) {
	rp := recs.at(int(seq))
	r := *rp
	if r.dir == 1 && m.kind != KindLifecycle && m.kind != KindInvalid {
		p.setLastSent(r.conn, sentReq{})
	}
	switch m.kind {
	case KindRequest:
		idText := func() []byte { return normalizeID(m.id.in(line)) } // for warnings: the line is not read again otherwise
		k := p.key(r.server, r.dir, r.conn, p.idOf(m, line))
		if r.dir == 1 && r.batch == 0 { // a batch rejected whole answers none of its members
			p.setLastSent(r.conn, sentReq{k, seq, true})
		}
		ex := p.exchangeOf(r.dir == 1, m, line)
		if ex != 0 {
			p.exch[seq] = ex
		}
		if resp, ok := p.orphans[k]; ok { // its response came first
			delete(p.orphans, k)
			p.pair(recs, seq, resp)
			recs.at(int(resp)).flags = recs.at(int(resp)).flags&^flagOrphan | flagReordered
			rp.flags |= flagReordered
			warnings.add(Warning{lineNo, fmt.Errorf("line %d: request id %s recorded after its response (line %d)", lineNo, idText(), recs.at(int(resp)).line)})
			break
		}
		if old, ok := p.pending[k]; ok && ex != 0 && p.exch[old] != 0 {
			// Another session-less POST with the same id (two clients
			// initializing at once): not a reuse, it pairs by its POST.
			p.queued[k] = append(p.queued[k], seq)
		} else if ok {
			rp.flags |= flagDuplicate
			warnings.add(Warning{lineNo, fmt.Errorf("line %d: request id %s reused while the request at line %d is unanswered; responses pair first in, first out", lineNo, idText(), recs.at(int(old)).line)})
			p.queued[k] = append(p.queued[k], seq)
		} else {
			p.pending[k] = seq
		}
		if m.inputResp {
			if prev, ok := p.inputReq[chainKey{r.server, r.conn, r.method}]; ok {
				p.chains[seq] = prev
				delete(p.inputReq, chainKey{r.server, r.conn, r.method})
			}
		}
	case KindResponse:
		reqDir := uint8(0)
		switch r.dir {
		case 1:
			reqDir = 2
		case 2:
			reqDir = 1
		}
		// The id, or _meta.inReplyTo for an id null: an answer to a
		// request the server could not read (pairText).
		id := func() []byte { return pairText(m, line) } // for warnings: the line is not read again otherwise
		k := p.key(r.server, reqDir, r.conn, p.idOf(m, line))
		if p.nullID(m, line) && reqDir == 1 && m.isError {
			if last := p.lastOf(r.conn); last.ok && ParseHTTPMeta(line[m.start:m.end]).Status >= 400 {
				if q, ok := p.pending[last.key]; ok && q == last.seq {
					k = last.key // the answer to the request its POST carried
				}
			}
		}
		if req, ok := p.ofExchange(k, p.exchangeOf(reqDir == 1, m, line)); ok {
			p.pair(recs, req, seq)
		} else if req, ok := p.pending[k]; ok {
			delete(p.exch, req)
			p.unpend(k)
			p.pair(recs, req, seq)
			if q := recs.at(int(req)); q.ts != noTime && r.ts != noTime && r.ts < q.ts {
				warnings.add(Warning{lineNo, fmt.Errorf("line %d: response id %s is stamped %v before its request (line %d): a negative latency; the recorder's clock moved?", lineNo, id(), time.Duration(q.ts-r.ts), q.line)})
			}
		} else if req, ok := p.cancelled[k]; ok {
			delete(p.cancelled, k)
			delete(p.exch, req)
			p.pair(recs, req, seq)
			rp.flags |= flagLate
		} else {
			rp.flags |= flagOrphan
			p.orphans[k] = seq
			warnings.add(Warning{lineNo, fmt.Errorf("line %d: response id %s matches no request before it", lineNo, id())})
		}
		if m.inputReq && rp.partner >= 0 {
			req := recs.at(int(rp.partner))
			p.inputReq[chainKey{r.server, r.conn, req.method}] = seq
		}
	case KindLifecycle:
		// An HTTP answer that carried no message but refused a request (a
		// 401 or 403 challenge) names it in _meta.inReplyTo: it answers
		// that request, which is so no longer pending. The record keeps
		// its own method.
		if !m.replyTo.ok() || string(m.method.in(line)) != `"`+MethodHTTPExchange+`"` {
			break
		}
		k := p.key(r.server, 1, r.conn, p.idOf(m, line))
		req, ok := p.ofExchange(k, p.exchangeOf(true, m, line))
		if !ok {
			if req, ok = p.pending[k]; ok {
				delete(p.exch, req)
				p.unpend(k)
			}
		}
		if ok {
			recs.at(int(req)).partner = seq
			rp.partner = req
		}
	case KindNotification:
		if m.cancels.ok() {
			k := p.key(r.server, r.dir, r.conn, p.idOf(m, line))
			if req, ok := p.pending[k]; ok {
				p.unpend(k)
				p.cancelled[k] = req
				recs.at(int(req)).flags |= flagCancelled
			}
		}
	}
}

// unpend removes the oldest pending request with key k.
func (p *pairer) unpend(k pairKey) {
	if q := p.queued[k]; len(q) > 0 {
		p.pending[k] = q[0]
		if len(q) == 1 {
			delete(p.queued, k)
		} else {
			p.queued[k] = q[1:]
		}
		return
	}
	delete(p.pending, k)
}

// pair links request req and response resp; the response takes the
// request's method.
func (p *pairer) pair(recs *recTable, req, resp int32) {
	recs.at(int(req)).partner = resp
	recs.at(int(resp)).partner = req
	recs.at(int(resp)).method = recs.at(int(req)).method
}

// idHash keys an id for pairing. Ids are compared by a 64-bit hash of
// their JSON text under a seed chosen per index: two different ids of one
// connection colliding is a 1 in 2^64 chance, and a tape cannot aim at it.
func (p *pairer) idHash(id []byte) uint64 { return maphash.Bytes(p.seed, id) }

// idOf returns the hash of the text message m (of line) pairs by
// (pairText): the classifying worker's (m.pid), when it hashed it.
func (p *pairer) idOf(m *msgInfo, line []byte) uint64 {
	if m.hashed {
		return m.pid
	}
	return p.idHash(pairText(m, line))
}

// nullID reports whether the text response m (of line) pairs by is null.
func (p *pairer) nullID(m *msgInfo, line []byte) bool {
	if m.hashed {
		return m.null
	}
	return string(pairText(m, line)) == "null"
}

// lastOf returns the client's last message on connection conn, if a
// request.
func (p *pairer) lastOf(conn uint32) sentReq {
	if int(conn) < len(p.lastSent) {
		return p.lastSent[conn]
	}
	return sentReq{}
}

// setLastSent notes the client's last message on connection conn (s.ok
// false: not a request). Connections are numbered from 0 in order of
// appearance: a slice, not a map, for a note on every message sent.
func (p *pairer) setLastSent(conn uint32, s sentReq) {
	if int(conn) >= len(p.lastSent) {
		if !s.ok {
			return
		}
		p.lastSent = append(p.lastSent, make([]sentReq, int(conn)+1-len(p.lastSent))...)
	}
	p.lastSent[conn] = s
}

// key folds (server, direction, connection) and an id's hash h into one
// pairKey: h XOR a bijective mix of the three. The same id on two
// connections gives two keys that differ (the mix is one-to-one); two
// different ids collide only where their seeded hashes differ by exactly
// the two mixes, a 1 in 2^64 chance, as before.
func (p *pairer) key(server uint16, dir uint8, conn uint32, h uint64) pairKey {
	c := uint64(server)<<40 | uint64(dir)<<32 | uint64(conn)
	c *= 0x9e3779b97f4a7c15 // odd: one-to-one
	c ^= c >> 29
	return pairKey(h ^ c)
}

// pairText returns the text message m (of line) pairs by, as pairer.add
// reads it: a request's id, a response's (its _meta.inReplyTo for an id
// null), an $http/exchange's _meta.inReplyTo, a cancellation's requestId;
// nil for the rest.
func pairText(m *msgInfo, line []byte) []byte {
	switch m.kind {
	case KindRequest:
		return normalizeID(m.id.in(line))
	case KindResponse:
		id := normalizeID(m.id.in(line))
		if string(id) == "null" && m.replyTo.ok() {
			id = normalizeID(m.replyTo.in(line))
		}
		return id
	case KindLifecycle:
		if m.replyTo.ok() {
			return normalizeID(m.replyTo.in(line))
		}
	case KindNotification:
		if m.cancels.ok() {
			return normalizeID(m.cancels.in(line))
		}
	}
	return nil
}

// prehash hashes, under seed, the text each of msgs (of line) pairs by
// (pairText), for the pairer to take instead of hashing it on the index's
// one goroutine: a classifying worker calls it.
func prehash(msgs []msgInfo, line []byte, seed maphash.Seed) {
	for i := range msgs {
		m := &msgs[i]
		if id := pairText(m, line); id != nil {
			m.pid, m.hashed, m.null = maphash.Bytes(seed, id), true, string(id) == "null"
		}
	}
}

// exchangeOf returns a hash of the session-less HTTP POST (_meta.exchange)
// a client request (clientReq) or its answer travelled in, or 0. A server
// request and the client's reply travel on different POSTs and pair by id
// alone, and so does a legacy answer, which comes on the GET stream.
func (p *pairer) exchangeOf(clientReq bool, m *msgInfo, line []byte) uint64 {
	if !clientReq || !m.exchange.ok() {
		return 0
	}
	return p.idHash(m.exchange.in(line)) | 1
}

// ofExchange takes, among the requests awaiting an answer under k, the one
// sent in POST ex (exchangeOf), when ex is not 0.
func (p *pairer) ofExchange(k pairKey, ex uint64) (int32, bool) {
	if ex == 0 {
		return 0, false
	}
	if req, ok := p.pending[k]; ok && p.exch[req] == ex {
		delete(p.exch, req)
		p.unpend(k)
		return req, true
	}
	q := p.queued[k]
	for i, req := range q {
		if p.exch[req] == ex {
			delete(p.exch, req)
			if len(q) == 1 {
				delete(p.queued, k)
			} else {
				p.queued[k] = append(q[:i:i], q[i+1:]...)
			}
			return req, true
		}
	}
	return 0, false
}

// normalizeID drops whitespace-insensitive differences: ids are compared as
// JSON tokens, so 1 and "1" differ but stay distinct from each other.
func normalizeID(id []byte) []byte { return bytes.TrimSpace(id) }

// Pair describes how a message takes part in a request/response pair.
type Pair struct {
	Partner   int           // the other message of the pair, or -1
	Method    string        // the request's method, for both messages of a pair
	Latency   time.Duration // response time minus request time (negative when Reordered), when Timed
	Timed     bool          // both messages of the pair have a timestamp
	Orphan    bool          // a response no request matched
	Pending   bool          // a request with no response on the tape
	Cancelled bool          // a request cancelled by notifications/cancelled
	Late      bool          // a response that came after its request was cancelled
	Reordered bool          // a pair whose response was recorded before its request
	Duplicate bool          // a request whose id was already in flight on its connection
	// ChainPrev is, for a 2026-07-28 retry request (params.inputResponses),
	// the input_required response it answers, or -1: together the requests
	// of a chain are one logical call.
	ChainPrev int
}

// Pair returns message i's pairing.
func (x *Index) Pair(i int) Pair {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.pairOf(i)
}

func (x *Index) pairOf(i int) Pair {
	r := x.recs.at(i)
	p := Pair{Partner: int(r.partner), Method: x.methods.names[r.method], ChainPrev: -1}
	p.Orphan = r.flags&flagOrphan != 0
	p.Cancelled = r.flags&flagCancelled != 0
	p.Late = r.flags&flagLate != 0
	p.Reordered = r.flags&flagReordered != 0
	p.Duplicate = r.flags&flagDuplicate != 0
	p.Pending = r.kind == KindRequest && r.partner < 0 && !p.Cancelled
	if r.partner >= 0 {
		o := x.recs.at(int(r.partner))
		if r.ts != noTime && o.ts != noTime {
			p.Timed = true
			if r.kind == KindRequest {
				p.Latency = time.Duration(o.ts - r.ts)
			} else {
				p.Latency = time.Duration(r.ts - o.ts)
			}
		}
	}
	if len(x.pairs.chains) > 0 { // most tapes have no retries: no hashing a message
		if prev, ok := x.pairs.chains[int32(i)]; ok {
			p.ChainPrev = int(prev)
		}
	}
	return p
}

// Chain returns the requests of the logical call that request i ends: the
// first request, its retries, and i, in order. A call without retries gives [i].
func (x *Index) Chain(i int) []int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := []int{i}
	for {
		prevResp, ok := x.pairs.chains[int32(out[0])]
		if !ok {
			break
		}
		req := x.recs.at(int(prevResp)).partner
		if req < 0 {
			break
		}
		out = append([]int{int(req)}, out...)
	}
	return out
}
