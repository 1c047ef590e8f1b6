package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// A HAR's bodies are not held: an entry keeps where its message's bytes
// are in the tape (harText), and the formatters read them from the file,
// mapped, when they write the entry. Only texts made of several messages
// (an SSE stream's events), the bodies of a tape that is not a regular
// file and the messages of a batch are held as strings.

// harText is a body: s, or (ref) message bytes of the tape's line at off,
// raw its first n bytes, and the text raw[:a] followed by raw[b:n] (the
// message without the tape's _meta, as tape.StripMeta cuts it).
type harText struct {
	s       string
	off     int64
	n, a, b int32
	ref     bool
}

func harString(s string) harText { return harText{s: s} }

// size is the text's length in bytes.
func (t harText) size() int {
	if t.ref {
		return int(t.a) + int(t.n-t.b)
	}
	return len(t.s)
}

// harMessage is a message's bytes as pass one sees them: raw (valid
// during the call), its body raw[:a]+raw[b:], and, when ref, the offset
// of its line in the tape, from which the formatters read it again.
type harMessage struct {
	raw  []byte
	a, b int
	off  int64
	ref  bool
}

// text is the message's body as an entry keeps it.
func (m harMessage) text() harText {
	if !m.ref || len(m.raw) > 1<<31-1 {
		return harText{s: m.String()}
	}
	return harText{off: m.off, n: int32(len(m.raw)), a: int32(m.a), b: int32(m.b), ref: true}
}

// String is the body, in memory of its own.
func (m harMessage) String() string {
	return string(m.raw[:m.a]) + string(m.raw[m.b:])
}

// harCut returns where raw's record metadata is (meta, a sub-slice of raw,
// as tape.RecordMeta finds it) and the body's bounds a and b as
// tape.StripMeta cuts it: the member and its separator, raw[:a]+raw[b:].
// Without a record _meta, a == b == len(raw). altMeta says whether the
// index found the record metadata in an AltMetaKey member (tape.Index.EntryAt).
func harCut(raw []byte, altMeta bool) (meta []byte, a, b int) {
	if !altMeta {
		if meta, a, ok := harTailMeta(raw); ok {
			return meta, a, len(raw) - 1
		}
	}
	meta = tape.RecordMeta(raw)
	if meta == nil {
		return nil, len(raw), len(raw)
	}
	ms := cap(raw) - cap(meta) // meta's start in raw
	me := ms + len(meta)
	// Back from the value over ':' and the member's name (which the
	// classifier matched without escapes) to what comes before it.
	i := harSkipBack(raw, ms-1)
	if i < 0 || raw[i] != ':' {
		return nil, len(raw), len(raw)
	}
	i = harSkipBack(raw, i-1) // the name's closing quote
	k := -1
	for _, name := range []string{tape.AltMetaKey, "_meta"} {
		if j := i - len(name) - 1; j >= 0 && raw[i] == '"' && raw[j] == '"' && string(raw[j+1:i]) == name {
			k = j
			break
		}
	}
	if k < 0 {
		return nil, len(raw), len(raw)
	}
	i = harSkipBack(raw, k-1)
	switch {
	case i >= 0 && raw[i] == ',': // after another member: cut from its end
		return meta, harSkipBack(raw, i-1) + 1, me
	case i >= 0 && raw[i] == '{': // the first member: cut it and the ',' after it
		j := jsonscan.SkipSpace(raw, me)
		if j < len(raw) && raw[j] == ',' {
			return meta, i + 1, j + 1
		}
		return meta, i + 1, me
	}
	return nil, len(raw), len(raw)
}

// harTailMeta finds the record metadata the writer puts last in a stdio
// message (most of a stdio tape's), without walking the message's members:
// raw (a message the index read, without trailing blanks) ending with
// ,"_meta":{"dir":"…","server":"…","ts":"…"}} (its strings without
// quotes or backslashes; stdioMeta) has it there. That ',' is not in a
// string (the '"' after it would end the string, and "_meta" cannot follow
// a string's end), so the member is one of the object the last '}' closes,
// the message itself, and its last "_meta": RecordMeta's, when the message
// has no AltMetaKey member (the caller knows). It returns the metadata and
// where the member's ',' is; ok false when raw does not end so.
func harTailMeta(raw []byte) (meta []byte, comma int, ok bool) {
	const key = `,"_meta":{"dir":"`
	n := len(raw)
	if n < 2 || raw[n-1] != '}' || raw[n-2] != '}' {
		return nil, 0, false
	}
	// The metadata's strings hold no quote: the member's name starts at
	// the fourteenth quote back from the end ("_meta" and the metadata's
	// six strings), found a quote at a time.
	q := n - 2
	for range 14 {
		if q = bytes.LastIndexByte(raw[:q], '"'); q < 0 {
			return nil, 0, false
		}
	}
	comma = q - 1
	if comma < 0 || string(raw[comma:min(comma+len(key), n)]) != key {
		return nil, 0, false
	}
	if comma == 0 || harSkipBack(raw, comma-1) != comma-1 {
		return nil, 0, false // blanks before the ',': harCut's general path cuts them
	}
	meta = raw[comma+len(`,"_meta":`) : n-1]
	if !stdioMeta(meta) {
		return nil, 0, false
	}
	return meta, comma, true
}

// harSkipBack returns the index of the last byte at or before i that is
// not JSON whitespace, or -1.
func harSkipBack(b []byte, i int) int {
	for i >= 0 && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i--
	}
	return i
}

// harLines reads the formatters' bodies from data, the tape's file mapped
// whole (read under mmap.Guard). With aliases, a body's long runs of bytes
// that need no escaping are not copied: each is noted there with where the
// output had reached, and written from the mapping (writeHARFrom).
type harLines struct {
	data    []byte
	aliases *[]harAlias
}

// harAlias is a run of a body's bytes p, left in the tape's mapping, that
// goes into the output where its buffer had reached at.
type harAlias struct {
	at int
	p  []byte
}

// harAliasMin is the shortest run left in the mapping: a shorter one is
// copied (a piece of its own costs the writer more than its copy).
const harAliasMin = 1024

// harRun appends run, or notes it in al when it is long enough to be
// written from the mapping.
func harRun(dst, run []byte, al *[]harAlias) []byte {
	if al != nil && len(run) >= harAliasMin {
		*al = append(*al, harAlias{at: len(dst), p: run})
		return dst
	}
	return append(dst, run...)
}

// appendText appends t quoted as encoding/json quotes a string (without
// HTML escaping), its bytes read from the tape when it is a ref.
func (l *harLines) appendText(dst []byte, t harText) ([]byte, error) {
	if !t.ref {
		return jsonscan.AppendQuoted(dst, t.s, false), nil
	}
	if l.data == nil {
		return dst, fmt.Errorf("a body at byte %d of the tape, but no tape to read it from", t.off)
	}
	if t.off >= int64(len(l.data)) {
		return dst, fmt.Errorf("read the message at byte %d of the tape again: %w", t.off, io.ErrUnexpectedEOF)
	}
	if rest := int64(len(l.data)) - t.off; rest < int64(t.n) {
		return dst, fmt.Errorf("read the message at byte %d of the tape again: expected %d bytes, found %d (the tape changed)", t.off, t.n, rest)
	}
	raw := l.data[t.off : t.off+int64(t.n)]
	dst = append(dst, '"')
	dst = appendHAREscapedTo(dst, raw[:t.a], l.aliases)
	dst = appendHAREscapedTo(dst, raw[t.b:], l.aliases)
	return append(dst, '"'), nil
}

// readText is t's text, read from r (the tape) when it is a ref: for the
// rare text that grows after it was kept (an SSE event added to an answer).
func readText(r io.ReaderAt, t harText) (string, error) {
	if !t.ref {
		return t.s, nil
	}
	if r == nil {
		return "", fmt.Errorf("a body at byte %d of the tape, but no tape to read it from", t.off)
	}
	raw := make([]byte, t.n)
	if k, err := r.ReadAt(raw, t.off); k < len(raw) {
		return "", fmt.Errorf("read the message at byte %d of the tape again: %w", t.off, err)
	}
	return string(raw[:t.a]) + string(raw[t.b:]), nil
}

// harPlain[c] says byte c goes into a JSON string as it is: ASCII from
// 0x20, except '"' and '\\'. Bytes from 0x80 are looked at as UTF-8.
var harPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendHAREscaped appends s escaped as encoding/json escapes a string's
// contents (jsonscan.AppendQuoted without HTML escaping, without the
// quotes): runs of bytes that need nothing are copied at once, found
// a word at a time and through a table, with well-formed UTF-8 (but U+2028 and U+2029) in them.
func appendHAREscaped(dst, s []byte) []byte {
	return appendHAREscapedTo(dst, s, nil)
}

// appendHAREscapedTo is appendHAREscaped, its long runs noted in al
// instead of copied when al is not nil (harRun).
func appendHAREscapedTo(dst, s []byte, al *[]harAlias) []byte {
	start := 0
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := -1, -1 // the next '"' and '\\' from where they were last looked for (harPlainRun)
	for i := 0; i < len(s); {
		// Sixteen bytes at a time, four times at most, then (a long
		// run, as a large answer's text is) to the next quote or
		// backslash at once; eight bytes at a time while none is '"',
		// '\\', a control byte or non-ASCII, then a byte at a time
		// through the table.
		n := 0
		for ; n < harShortWords && i+16 <= len(s); n++ {
			w, v := binary.LittleEndian.Uint64(s[i:]), binary.LittleEndian.Uint64(s[i+8:])
			wq, wb, vq, vb := w^(ones*'"'), w^(ones*'\\'), v^(ones*'"'), v^(ones*'\\')
			if ((wq-ones)&^wq|(wb-ones)&^wb|(w-ones*0x20)|w|(vq-ones)&^vq|(vb-ones)&^vb|(v-ones*0x20)|v)&highs != 0 {
				break
			}
			i += 16
		}
		if n == harShortWords {
			i = harPlainRun(s, i, &q, &bs)
		}
		for i+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[i:])
			q, bs := w^(ones*'"'), w^(ones*'\\')
			if ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)|w)&highs != 0 {
				break
			}
			i += 8
		}
		for i < len(s) && harPlain[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = harRun(dst, s[start:i], al)
			dst = jsonscan.AppendEscape(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = harRun(dst, s[start:i], al)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = harRun(dst, s[start:i], al)
			dst = append(dst, '\\', 'u', '2', '0', '2', "0123456789abcdef"[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return harRun(dst, s[start:], al)
}

// harShortWords is how many sixteen-byte steps appendHAREscaped takes
// before it looks for the end of a long run with bytes.IndexByte.
const harShortWords = 4

// harPlainRun returns the end of the run of bytes harPlain takes from
// s[i]: the first '"', '\\', control byte or byte from 0x80 at or after
// i, or len(s). *q and *bs are the next quote and backslash at or after
// where they were last looked for (len(s) for none; below i, not looked
// for since): each is looked for again only once passed, so a string is
// crossed once by each bytes.IndexByte (vector instructions), and the
// bytes before the nearer one are checked for control bytes and non-ASCII
// eight at a time.
func harPlainRun(s []byte, i int, q, bs *int) int {
	next := func(at *int, c byte) {
		if *at < i {
			if k := bytes.IndexByte(s[i:], c); k >= 0 {
				*at = i + k
			} else {
				*at = len(s)
			}
		}
	}
	next(q, '"')
	next(bs, '\\')
	end := min(*q, *bs)
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+32 <= end; i += 32 {
		// 32 bytes at a time while none is flagged (a flag below 0x20 or
		// from 0x80 in any of the four words: one branch); the eight-byte
		// loop below finds which.
		p := (*[32]byte)(s[i:])
		w0, w1 := binary.LittleEndian.Uint64(p[0:]), binary.LittleEndian.Uint64(p[8:])
		w2, w3 := binary.LittleEndian.Uint64(p[16:]), binary.LittleEndian.Uint64(p[24:])
		if ((w0-ones*0x20)|w0|(w1-ones*0x20)|w1|(w2-ones*0x20)|w2|(w3-ones*0x20)|w3)&highs != 0 {
			break
		}
	}
	for ; i+8 <= end; i += 8 {
		// The lowest flagged byte is the first below 0x20 or from 0x80: a
		// borrow only runs upwards from a byte below 0x20.
		w := binary.LittleEndian.Uint64(s[i:])
		if m := ((w - ones*0x20) | w) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < end; i++ {
		if !harPlain[s[i]] {
			return i
		}
	}
	return end
}

// stdioMeta reports whether meta is exactly {"dir":"…","server":"…","ts":"…"}
// (strings without escapes), a stdio record's metadata, which holds no
// HTTP metadata (tape.ParseHTTPMeta would find none): most records of a
// stdio tape, which are then not scanned again.
func stdioMeta(meta []byte) bool {
	rest := meta
	for _, key := range []string{`{"dir":"`, `,"server":"`, `,"ts":"`} {
		if len(rest) < len(key) || string(rest[:len(key)]) != key {
			return false
		}
		rest = rest[len(key):]
		k := bytes.IndexByte(rest, '"')
		if k < 0 || bytes.IndexByte(rest[:k], '\\') >= 0 {
			return false
		}
		rest = rest[k+1:]
	}
	return string(rest) == "}"
}
