// Package compare compares two sessions (tapedeck diff): per server, the
// client's calls of A and B are aligned by a diff over their keys (method,
// target and params by meaning), so an inserted or a missing call does not
// shift the rest; aligned calls are compared by their answers (status,
// result or error, latency), and the two sessions' handshakes and tool,
// prompt and resource definitions are compared too.
//
// The alignment is Myers' diff (sergi/go-diff, linear space, with a time
// limit) over one rune a distinct call key.
package compare

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// Options tune the comparison.
type Options struct {
	Server string // only this server ("" for all servers on either tape)
	// Ignore lists paths left out of every comparison (as replay's --ignore,
	// e.g. result.content.0.text).
	Ignore []tape.Path
	// A latency change is reported when it is both over LatencyAbs and
	// over LatencyRatio times (either way).
	LatencyAbs   time.Duration
	LatencyRatio float64
}

// Side is one tape to compare.
type Side struct {
	Name  string
	Index *tape.Index
	Open  func() (io.ReadCloser, error)
	keys  *Keys // the keys its index computed (OpenSideKeyed), or nil
}

// OpenSide indexes the tape at path for Compare.
func OpenSide(path string) (Side, error) {
	x, err := tape.OpenIndex(path)
	if err != nil {
		return Side{}, err
	}
	return Side{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return tape.ReopenIndexed(x, path) }}, nil
}

// call is what the alignment keeps of a call: no bodies, and small (a
// million-message tape has a third of a million calls a side).
type call struct {
	req, resp int32
	code      int32
	timed     bool
	needCode  bool     // code is the answer's error code (read with its bytes)
	method    string   // interned: shared by every call of the method
	key       [16]byte // method and normalized params
	answer    uint64   // the answer's result or error member, as recorded, hashed
	status    string   // one of tape.Call's statuses (constants)
	latency   time.Duration
}

// Report is the comparison.
type Report struct {
	A, B    string         `json:"-"`
	Servers []ServerReport `json:"servers"`
}

// Differences counts what differs.
func (r Report) Differences() int {
	n := 0
	for _, s := range r.Servers {
		n += s.differences()
	}
	return n
}

// ServerReport is one server's comparison.
type ServerReport struct {
	Server string `json:"server"`
	// ServerB is B's name of the server when it differs from A's (the
	// servers were paired by the name they gave themselves, or as the only
	// ones left).
	ServerB     string       `json:"serverB,omitempty"`
	OnlyIn      string       `json:"onlyIn,omitempty"` // "A" or "B" when the server is on one tape only
	Protocol    *Change      `json:"protocol,omitempty"`
	ServerInfo  *Change      `json:"serverInfo,omitempty"`
	Caps        []Change     `json:"capabilities,omitempty"`
	Definitions []Definition `json:"definitions,omitempty"`
	CallsA      int          `json:"callsA"`
	CallsB      int          `json:"callsB"`
	Matched     int          `json:"matched"`
	Calls       []CallDiff   `json:"calls,omitempty"`
	// Aligned is every call of A and B in aligned order (for the
	// debugger's side-by-side view): A and B are request seqs, -1 on the
	// side that has none; Diffs index Calls.
	Aligned []Aligned `json:"-"`
}

// Aligned is a row of the side-by-side alignment.
type Aligned struct {
	A, B  int
	Diffs []int
}

func (s ServerReport) differences() int {
	n := len(s.Caps) + len(s.Definitions) + len(s.Calls)
	if s.OnlyIn != "" {
		n++
	}
	if s.Protocol != nil {
		n++
	}
	if s.ServerInfo != nil {
		n++
	}
	return n
}

// Change is a value in A and in B.
type Change struct {
	What string `json:"what,omitempty"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// Definition is a tool, prompt or resource added, removed or changed
// between the two sessions' last listings.
type Definition struct {
	Kind   string        `json:"kind"` // tool, prompt, resource, resource template
	Name   string        `json:"name"`
	Change string        `json:"change"` // added, removed, changed
	Diff   []tape.DiffOp `json:"diff,omitempty"`
}

// CallDiff is a call on one side only, or an aligned pair that differs.
type CallDiff struct {
	Kind    string        `json:"kind"` // onlyA, onlyB, params, status, result, latency
	A       int           `json:"a"`    // the request's seq in A, or -1
	B       int           `json:"b"`
	Method  string        `json:"method"`
	Target  string        `json:"target,omitempty"`
	Params  string        `json:"params,omitempty"` // for a call on one side: its params, compact
	StatusA string        `json:"statusA,omitempty"`
	StatusB string        `json:"statusB,omitempty"`
	Diff    []tape.DiffOp `json:"diff,omitempty"`
	// LatencyA and LatencyB are the two answers' latencies (kind latency).
	LatencyA time.Duration `json:"latencyA,omitempty"`
	LatencyB time.Duration `json:"latencyB,omitempty"`
}

// Compare compares a and b.
func Compare(a, b Side, o Options) (Report, error) {
	r := Report{A: a.Name, B: b.Name}
	pairs := pairServers(a.Index, b.Index)
	if o.Server != "" {
		var only []serverPair
		for _, p := range pairs {
			if p.inA && p.a == o.Server || p.inB && p.b == o.Server {
				only = append(only, p)
			}
		}
		if len(only) == 0 {
			return r, fmt.Errorf("server %q is on neither tape", o.Server)
		}
		pairs = only
	}
	n := &tape.Normalizer{Ignore: o.Ignore}
	// Calls are keyed by 128 bits of hash of their method and canonical
	// params, the same seeds for both tapes.
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	if a.keys != nil && a.keys == b.keys && a.keys.fits(o) {
		seeds = a.keys.seeds // and the calls' keys computed by the indexes count
	} else {
		a.keys, b.keys = nil, nil
	}
	la, lb := newAnswers(a.Index), newAnswers(b.Index)
	for _, p := range pairs {
		sr := ServerReport{Server: p.a}
		switch {
		case !p.inB:
			sr.OnlyIn = "A"
		case !p.inA:
			sr.OnlyIn, sr.Server = "B", p.b
		case p.b != p.a:
			sr.ServerB = p.b
		}
		// The two tapes are read at once, one a core.
		var (
			ca, cb    []call
			err, errB error
			done      = make(chan struct{})
		)
		go func() {
			defer close(done)
			if p.inB {
				cb, errB = calls(b, p.b, &tape.Normalizer{Ignore: o.Ignore}, seeds, notPolls(b.Index), lb)
			}
		}()
		if p.inA {
			ca, err = calls(a, p.a, n, seeds, notPolls(a.Index), la)
		}
		<-done
		if err != nil {
			return r, fmt.Errorf("%s: %w", a.Name, err)
		}
		if errB != nil {
			return r, fmt.Errorf("%s: %w", b.Name, errB)
		}
		sr.CallsA, sr.CallsB = len(ca), len(cb)
		if p.inA && p.inB {
			handshake(&sr, la, lb, p.a, p.b)
			sr.Definitions = definitions(la, lb, p.a, p.b, n)
		}
		sr.Calls, sr.Matched, sr.Aligned = alignCalls(ca, cb, a.Index, b.Index, n, o, seeds[0])
		r.Servers = append(r.Servers, sr)
	}
	return r, nil
}

// serverPair is a server of A and the server of B it is compared with.
type serverPair struct {
	a, b     string
	inA, inB bool
}

// pairServers pairs the servers of two tapes: by their tape name; then,
// among those left, by the name the server gave itself (serverInfo.name in
// its initialize or server/discover answer), since one server recorded
// over stdio and over HTTP has two tape names (its command, its URL); and
// when one server of each tape is left, those two. The rest are on one tape
// only. Pairs are in the order of A's names, then B's.
func pairServers(xa, xb *tape.Index) []serverPair {
	as, bs := slices.Clone(xa.Servers()), slices.Clone(xb.Servers())
	slices.Sort(as)
	slices.Sort(bs)
	var out []serverPair
	var restA []string
	usedB := map[string]bool{}
	for _, s := range as {
		if slices.Contains(bs, s) {
			out = append(out, serverPair{a: s, b: s, inA: true, inB: true})
			usedB[s] = true
		} else {
			restA = append(restA, s)
		}
	}
	var restB []string
	for _, s := range bs {
		if !usedB[s] {
			restB = append(restB, s)
		}
	}
	var leftA []string
	for _, s := range restA {
		id := selfName(xa, s)
		k := -1
		if id != "" {
			k = slices.IndexFunc(restB, func(t string) bool { return selfName(xb, t) == id })
		}
		if k < 0 {
			leftA = append(leftA, s)
			continue
		}
		out = append(out, serverPair{a: s, b: restB[k], inA: true, inB: true})
		restB = slices.Delete(restB, k, k+1)
	}
	if len(leftA) == 1 && len(restB) == 1 {
		out = append(out, serverPair{a: leftA[0], b: restB[0], inA: true, inB: true})
		leftA, restB = nil, nil
	}
	for _, s := range leftA {
		out = append(out, serverPair{a: s, inA: true})
	}
	for _, s := range restB {
		out = append(out, serverPair{b: s, inB: true})
	}
	return out
}

// selfName is the name server s of x gave itself: serverInfo.name in its
// last initialize answer, or in the _meta of its last server/discover
// answer (2026-07-28); "" when it gave none.
func selfName(x *tape.Index, s string) string {
	if r := lastAnswer(x, s, "initialize"); r != nil {
		if n := gjson.GetBytes(r, "result.serverInfo.name").String(); n != "" {
			return n
		}
	}
	if r := lastAnswer(x, s, tape.MethodDiscover); r != nil {
		return gjson.GetBytes(r, `result._meta.io\.modelcontextprotocol/serverInfo.name`).String()
	}
	return ""
}

// calls reads the client's calls of server s, in recorded order; keep, if
// not nil, chooses among them by their request's seq. The index says
// which messages are calls and answers, how they pair, when they were
// sent and how they failed; one sequential read of the file, in step with
// the index, takes only those messages' bytes (no line classified again),
// and their params and answers are hashed from their bytes: params through
// one canonical scan (canonParams), decoded only where it cannot tell.
// ans, if not nil, is given server s's last answers on the way (see
// answers.note), which spares it a walk of its own.
func calls(side Side, s string, n *tape.Normalizer, seeds [2]maphash.Seed, keep func(seq int) bool, ans *answers) (_ []call, err error) {
	x := side.Index
	strs := map[string]string{}
	intern := func(v string) string {
		if w, ok := strs[v]; ok {
			return w
		}
		if len(strs) < 1<<16 {
			strs[v] = v
		}
		return v
	}
	r, err := side.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer func() {
		if errors.Is(err, mmap.ErrShrank) {
			err = fmt.Errorf("read tape %s: %w", side.Name, err)
		}
	}()
	defer mmap.Catch(&err)() // the tape cut shorter while mapped: ErrShrank, not a crash
	// at reads message e's bytes (next is the message after it, nil for
	// the last), in the index's order.
	var at func(e tape.Entry, next *tape.Entry) ([]byte, error)
	if sr := newSpanReader(x, r, spanThreshold, spanWindow); sr != nil {
		defer sr.Close()
		at = sr.At
	} else {
		br := tape.NewMessageReader(x, r)
		defer br.Close()
		at = func(e tape.Entry, _ *tape.Entry) ([]byte, error) { return br.At(e) }
	}
	answerOf := func(k *call, raw []byte) {
		// Answers with the same bytes are the same: only the others are
		// read again and compared by meaning (see answerHash).
		k.answer = answerHash(seeds[0], raw)
		if k.needCode {
			k.code = errorCode(raw)
		}
	}
	// digs are the keys and hashes the index computed (OpenSideKeyed).
	var digs tape.Digests
	if side.keys != nil && side.keys.seeds == seeds {
		digs = x.Digests()
	}
	digested := func(seq int) (tape.Digest, bool) {
		d := digs.At(seq)
		return d, d.OK
	}
	// awaited[seq] is 1 + the call whose answer is at seq (0: none).
	awaited := make([]int32, x.Len())
	out := make([]call, 0, x.Len()/3+1) // most tapes are a third calls or more
	var canon []byte
	cs := canonScan{digest: &digester{seed: seeds[1]}}
	var last map[string]int
	if ans != nil {
		last = map[string]int{}
	}
	nx := x.Len()
	// entryAt is message i and the one after it (nil for the last), to
	// read i's bytes where the index did not digest them.
	entryAt := func(i int) (tape.Entry, *tape.Entry) {
		e := x.Entry(i)
		if i+1 < nx {
			next := x.Entry(i + 1)
			return e, &next
		}
		return e, nil
	}
	// The index's facts are read a thousand messages under one lock.
	buf := make([]tape.Brief, 1024)
	for base := 0; base < nx; {
		briefs := x.Briefs(base, buf[:0:min(len(buf), nx-base)])
		if len(briefs) == 0 {
			break
		}
		for j := range briefs {
			i, b := base+j, &briefs[j]
			if last != nil && b.Server == s && b.Kind == tape.KindResponse && b.Dir == tape.DirRecv {
				if m := b.Method; answered(m) {
					last[m] = i
				}
			}
			if w := awaited[i]; w != 0 {
				if d, ok := digested(i); ok {
					answerDigest(&out[w-1], d)
					continue
				}
				raw, err := at(entryAt(i))
				if err != nil {
					return out, err
				}
				answerOf(&out[w-1], raw)
				continue
			}
			if b.Kind != tape.KindRequest || b.Dir != tape.DirSend || (s != "" && b.Server != s) {
				continue
			}
			if keep != nil && !keep(i) {
				continue
			}
			k := call{req: int32(i), resp: -1, method: intern(b.Method)}
			var early []byte // the answer, recorded before the request
			switch {
			case b.Partner < 0 && b.Cancelled:
				k.status = "cancelled"
			case b.Partner < 0:
				k.status = "pending"
			default:
				rb := x.Brief(b.Partner)
				if rb.Kind == tape.KindLifecycle {
					// Refused over HTTP by a 401 or 403 challenge: a record that
					// carried no message answers it (tape.ReadCalls: no response).
					k.status = "challenged"
					break
				}
				k.resp = int32(b.Partner)
				k.status, k.needCode = answerStatus(rb)
				if b.Timed && rb.Timed {
					k.latency, k.timed = time.Unix(0, rb.Time).Sub(time.Unix(0, b.Time)), true
				}
				if b.Partner > i {
					awaited[b.Partner] = int32(len(out) + 1)
				} else if d, ok := digested(b.Partner); ok {
					answerDigest(&k, d)
				} else {
					m, err := x.Message(b.Partner)
					if err != nil {
						return out, err
					}
					early = m.Raw
				}
			}
			if d, ok := digested(i); ok {
				putKey(&k, d.V)
				if early != nil {
					answerOf(&k, early)
				}
				out = append(out, k)
				continue
			}
			raw, err := at(entryAt(i))
			if err != nil {
				return out, err
			}
			canon = paramsKey(&cs, append(append(canon[:0], k.method...), 0), raw, n)
			binary.LittleEndian.PutUint64(k.key[:8], maphash.Bytes(seeds[0], canon))
			binary.LittleEndian.PutUint64(k.key[8:], maphash.Bytes(seeds[1], canon))
			if early != nil {
				answerOf(&k, early)
			}
			out = append(out, k)
		}
		base += len(briefs)
	}
	if ans != nil {
		ans.seqs[s] = last
	}
	return out, nil
}

// paramsKey appends to key the canonical bytes of the request raw's params
// (tape.CanonicalValue of Normalizer.NormalizeParams): found by one scan of
// their bytes from where the params start (no second scan to find where they
// end), or decoded where the scan cannot tell. With cs.digest, long string
// values are digested (see digester), on either path.
func paramsKey(cs *canonScan, key, raw []byte, n *tape.Normalizer) []byte {
	start, found, ok := valueStart(raw, "params")
	if ok && !found {
		if b, ok := cs.params(key, nil, n); ok {
			return b
		}
	}
	if ok && found {
		if b, end, ok := cs.paramsAt(key, raw, start, n); ok && memberEnds(raw, end) {
			return b
		}
	}
	params := gjsonGet(raw, "params").Raw
	if b, ok := cs.params(key, []byte(params), n); ok {
		return b
	}
	if v, err := n.NormalizeParams([]byte(params)); err == nil {
		if b, err := tape.CanonicalValue(v); err == nil {
			if cs.digest != nil {
				return cs.digest.canon(key, b)
			}
			return append(key, b...)
		}
	}
	return append(key, params...)
}

// answerHash is the hash of response raw's answer as calls keeps it: where
// the message is a result followed by the tape's _meta and nothing else
// (as tapedeck writes them), the bytes from the result's value to the
// _meta, found from both ends without a walk of the result, tagged 1;
// otherwise answerBytes', tagged 0. Equal hashes mean equal answers; a
// tagged 1 hash may differ where answerBytes' hashes do not (members
// between the result and the _meta): sameAnswer tells.
func answerHash(seed maphash.Seed, raw []byte) uint64 {
	if v, ok := resultToMeta(raw); ok {
		return maphash.Bytes(seed, v) | 1
	}
	return maphash.Bytes(seed, answerBytes(raw)) &^ 1
}

// resultToMeta is raw from the value of its first top-level "result"
// member to its last member, "_meta", the tape's; false when raw is not
// like that.
func resultToMeta(raw []byte) ([]byte, bool) {
	start, found, ok := valueStart(raw, "result")
	if !found || !ok {
		return nil, false
	}
	// The message's last '}', and the last '{' before it: the _meta's
	// (an object of strings) when `,"_meta":` is just before it. `,"` is
	// no string's content (a quote in a string follows a backslash), and
	// the member is a top-level one when its value closes the message.
	end := len(raw)
	for end > 0 && (raw[end-1] == ' ' || raw[end-1] == '\t' || raw[end-1] == '\r' || raw[end-1] == '\n') {
		end--
	}
	if end == 0 || raw[end-1] != '}' {
		return nil, false
	}
	const key = `,"_meta":`
	open := bytes.LastIndexByte(raw[:end-1], '{')
	m := open - len(key)
	if m < start || string(raw[m:open]) != key {
		return nil, false
	}
	if vend, ok := skipValue(raw, open); !ok || skipWS(raw, vend) != end-1 {
		return nil, false
	}
	return raw[start:m], true
}

// sameAnswer reports whether two responses' answers are the same bytes
// (answerBytes), read again when their hashes (answerHash) could differ
// with the same answer bytes.
func sameAnswer(seed maphash.Seed, ha, hb uint64, xa, xb *tape.Index, ra, rb int) bool {
	if ha == hb {
		return true
	}
	if ha&1 == 0 && hb&1 == 0 {
		return false
	}
	ma, err := xa.Message(ra)
	if err != nil {
		return false
	}
	mb, err := xb.Message(rb)
	if err != nil {
		return false
	}
	return bytes.Equal(answerBytes(ma.Raw), answerBytes(mb.Raw))
}

// answerBytes is the answer of response raw as recorded: its result
// member, else its error member (gjson's Raw of either), "" when neither.
func answerBytes(raw []byte) []byte {
	if v, found, ok := memberValue(raw, "result"); ok {
		if found {
			return v
		}
		if v, found, ok := memberValue(raw, "error"); ok {
			if found {
				return v
			}
			return nil
		}
	}
	ans := gjsonGet(raw, "result")
	if !ans.Exists() {
		ans = gjsonGet(raw, "error")
	}
	return []byte(ans.Raw)
}

// gjsonGet is gjson.GetBytes without its copy of the result: the result
// points into raw and must not outlive it.
func gjsonGet(raw []byte, path string) gjson.Result {
	if len(raw) == 0 {
		return gjson.Result{}
	}
	return gjson.Get(unsafe.String(&raw[0], len(raw)), path)
}

// answerStatus is a call's status from its answer's Brief, as
// tape.ReadCalls gives it, and whether its JSON-RPC error code counts
// (errorCode of the answer's bytes).
func answerStatus(b tape.Brief) (string, bool) {
	status, code := "ok", false
	switch b.Failure {
	case tape.RPCError:
		status, code = "error", true
	case tape.NoFailure:
		if b.Negotiation {
			status, code = "negotiation", true
		}
	case tape.ToolError:
		status = "tool-error"
	}
	if b.Late {
		status = "late"
	}
	return status, code
}

// errorCode is the JSON-RPC error code of response raw.
func errorCode(raw []byte) int32 {
	return int32(gjson.GetBytes(tape.StripMeta(raw), "error.code").Int())
}
