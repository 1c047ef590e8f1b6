package compare

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape"
)

// canonParams appends to dst the bytes tape.CanonicalValue gives for
// n.NormalizeParams(params), found by one scan of params' bytes with no
// decoding into generic values. It reports false (and the caller takes
// the decoding path) for what the scan does not handle: ignore paths,
// escapes other than \" \\ \n \r \t, a key with any escape, U+2028 or
// U+2029, invalid UTF-8, a duplicate key, nesting deeper than 500, and
// anything that is not one JSON value. Where it reports true its bytes are
// the decoding path's (TestCanonParamsAgrees).
func canonParams(dst, params []byte, n *tape.Normalizer) ([]byte, bool) {
	var c canonScan
	return c.params(dst, params, n)
}

// params is canonParams with c's scratch space, kept from call to call.
func (c *canonScan) params(dst, params []byte, n *tape.Normalizer) ([]byte, bool) {
	if len(n.Ignore) > 0 {
		return dst, false
	}
	i := skipWS(params, 0)
	if i == len(params) {
		return append(dst, "null"...), true
	}
	b, end, ok := c.paramsAt(dst, params, i, n)
	if !ok || skipWS(params, end) != len(params) {
		return dst, false
	}
	return b, true
}

// paramsAt is params for the value starting at s[i], which need not end
// the input: it also returns where the value ends.
func (c *canonScan) paramsAt(dst, s []byte, i int, n *tape.Normalizer) ([]byte, int, bool) {
	if len(n.Ignore) > 0 || i >= len(s) {
		return dst, i, false
	}
	c.b, c.n, c.ms = dst, n, c.ms[:0]
	var ok bool
	if s[i] == '{' {
		i, ok = c.object(s, i, 0, true, nil)
	} else {
		i, ok = c.value(s, i, 0)
	}
	if !ok {
		return dst, i, false
	}
	return c.b, i, true
}

type canonScan struct {
	b, tmp []byte
	n      *tape.Normalizer
	ms     []member // a stack: each object's members above its parent's
	drops  [][]byte // a stack as ms: the keys of the members left out
	// digest, if not nil, writes string values longer than digestMin
	// bytes as their hashes (see digester): the key of the canonical
	// bytes, not the bytes.
	digest *digester
}

type member struct {
	key        []byte
	start, end int // the member's bytes in b: "key":value
}

func skipWS(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func (c *canonScan) value(s []byte, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch ch := s[i]; {
	case ch == '{':
		return c.object(s, i, depth, false, nil)
	case ch == '[':
		if depth > 500 {
			return i, false
		}
		c.b = append(c.b, '[')
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == ']' {
			c.b = append(c.b, ']')
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = c.value(s, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return i, false
			}
			if s[i] == ']' {
				c.b = append(c.b, ']')
				return i + 1, true
			}
			if s[i] != ',' {
				return i, false
			}
			c.b = append(c.b, ',')
			i = skipWS(s, i+1)
		}
	case ch == '"':
		j, _, ok := scanString(s, i, false)
		if ok {
			if c.digest != nil && j-i > digestMin {
				c.b = c.digest.str(c.b, s[i:j])
			} else {
				c.b = append(c.b, s[i:j]...)
			}
		}
		return j, ok
	case ch == 't':
		return c.literal(s, i, "true")
	case ch == 'f':
		return c.literal(s, i, "false")
	case ch == 'n':
		return c.literal(s, i, "null")
	case ch == '-' || ch >= '0' && ch <= '9':
		j, frac, ok := scanNumber(s, i)
		if !ok {
			return j, false
		}
		num := s[i:j]
		switch {
		case !frac && string(num) == "-0":
			c.b = append(c.b, '0')
		case !frac:
			c.b = append(c.b, num...)
		default:
			c.b = append(c.b, tape.CanonicalNumber(string(num))...)
		}
		return j, true
	}
	return i, false
}

func (c *canonScan) literal(s []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(s[i:], []byte(lit)) {
		return i, false
	}
	c.b = append(c.b, lit...)
	return i + len(lit), true
}

// volatile is the Normalizer's rule for params._meta keys that change on
// every run.
func volatile(k []byte) bool { return tape.VolatileMetaKey(string(k)) }

// object appends an object with its members sorted by key. top marks the
// params object itself, where the Normalizer's rules apply: params._meta
// without its volatile keys (and dropped when empty), an absent arguments
// (beside name) or context (beside ref) read as {}, and empty params as
// null (see tape.Normalizer).
func (c *canonScan) object(s []byte, i, depth int, top bool, drop func(key []byte) bool) (int, bool) {
	if depth > 500 {
		return i, false
	}
	base, dbase := len(c.ms), len(c.drops)
	i, ok := c.members(s, i, depth, top, drop, base, dbase)
	c.ms, c.drops = c.ms[:base], c.drops[:dbase] // this object's, popped
	return i, ok
}

// members is object for the object at s[i], its members pushed on c.ms
// from base and its left-out keys on c.drops from dbase.
func (c *canonScan) members(s []byte, i, depth int, top bool, drop func(key []byte) bool, base, dbase int) (int, bool) {
	start := len(c.b)
	c.b = append(c.b, '{')
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		for {
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			j, esc, ok := scanString(s, i, true)
			if !ok || esc {
				return j, false
			}
			key := s[i+1 : j-1]
			i = skipWS(s, j)
			if i >= len(s) || s[i] != ':' {
				return i, false
			}
			i = skipWS(s, i+1)
			comma := len(c.b)
			if len(c.ms) > base {
				c.b = append(c.b, ',')
			}
			m := member{key: key, start: len(c.b)}
			c.b = append(c.b, s[j-len(key)-2:j]...)
			c.b = append(c.b, ':')
			if top && string(key) == "_meta" && i < len(s) && s[i] == '{' {
				vs := len(c.b)
				if i, ok = c.meta(s, i, depth+1); !ok {
					return i, false
				}
				if string(c.b[vs:]) == "{}" && (!c.n.KeepVolatile || !c.n.Exact) {
					c.b = c.b[:comma] // an empty _meta is absent
					m.start = -1
					c.drops = append(c.drops, key)
				}
			} else if i, ok = c.value(s, i, depth+1); !ok {
				return i, false
			}
			switch {
			case drop != nil && drop(key):
				c.b = c.b[:comma]
				c.drops = append(c.drops, key)
			case m.start >= 0:
				m.end = len(c.b)
				c.ms = append(c.ms, m)
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return i, false
			}
			if s[i] == '}' {
				i++
				break
			}
			if s[i] != ',' {
				return i, false
			}
			i = skipWS(s, i+1)
		}
	}
	if top && !c.n.Exact {
		has := func(k string) bool {
			return slices.ContainsFunc(c.ms[base:], func(m member) bool { return string(m.key) == k })
		}
		for _, f := range [...][2]string{{"name", "arguments"}, {"ref", "context"}} {
			if has(f[0]) && !has(f[1]) {
				if len(c.ms) > base {
					c.b = append(c.b, ',')
				}
				m := member{key: []byte(f[1]), start: len(c.b)}
				c.b = append(c.b, `"`+f[1]+`":{}`...)
				m.end = len(c.b)
				c.ms = append(c.ms, m)
			}
		}
		if len(c.ms) == base {
			c.b = append(c.b[:start], "null"...)
			return i, true
		}
	}
	if !c.sortMembers(start+1, c.ms[base:], c.drops[dbase:]) {
		return i, false
	}
	c.b = append(c.b, '}')
	return i, true
}

// meta appends params._meta without its volatile keys (all kept with
// KeepVolatile).
func (c *canonScan) meta(s []byte, i, depth int) (int, bool) {
	if c.n.KeepVolatile {
		return c.object(s, i, depth, false, nil)
	}
	return c.object(s, i, depth, false, volatile)
}

// sortMembers puts the members written from b[from:] in key order with
// commas between them; false on a duplicate key, dropped members' keys
// among them (decoding keeps a duplicate's last value).
func (c *canonScan) sortMembers(from int, ms []member, dropped [][]byte) bool {
	for k, d := range dropped {
		if slices.ContainsFunc(dropped[k+1:], func(e []byte) bool { return bytes.Equal(d, e) }) ||
			slices.ContainsFunc(ms, func(m member) bool { return bytes.Equal(m.key, d) }) {
			return false
		}
	}
	sorted := true
	for k := 1; k < len(ms); k++ {
		switch bytes.Compare(ms[k-1].key, ms[k].key) {
		case 0:
			return false
		case 1:
			sorted = false
		}
	}
	if sorted {
		return true // written in order, commas between
	}
	if len(ms) <= 12 {
		// An insertion sort, as slices.SortFunc does for so few, without
		// its calls of a comparison function (params are mostly a name
		// and arguments, in that order: one swap).
		for k := 1; k < len(ms); k++ {
			for j := k; j > 0 && bytes.Compare(ms[j-1].key, ms[j].key) > 0; j-- {
				ms[j-1], ms[j] = ms[j], ms[j-1]
			}
		}
	} else {
		slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	}
	for k := 1; k < len(ms); k++ {
		if bytes.Equal(ms[k-1].key, ms[k].key) {
			return false
		}
	}
	// Rewrite in key order. Keys point into the source, not into b, so b
	// can be rebuilt from a copy.
	c.tmp = append(c.tmp[:0], c.b[from:]...)
	c.b = c.b[:from]
	for k, m := range ms {
		if k > 0 {
			c.b = append(c.b, ',')
		}
		c.b = append(c.b, c.tmp[m.start-from:m.end-from]...)
	}
	return true
}

// scanString returns the end of the string at s[i] (past its closing
// quote) and whether it holds an escape; false for what the scan leaves
// to the decoding path (see canonParams).
func scanString(s []byte, i int, key bool) (int, bool, bool) {
	// Most strings hold no escape: the closing quote is the next one, found
	// with bytes.IndexByte, and the bytes before it are checked eight at a
	// time for control characters and bytes above ASCII.
	q := bytes.IndexByte(s[i+1:], '"')
	if q < 0 {
		return len(s), false, false
	}
	q += i + 1
	str := s[i+1 : q]
	if bytes.IndexByte(str, '\\') >= 0 {
		return scanEscaped(s, i, key)
	}
	if printableASCII(str) {
		return q + 1, false, true
	}
	high := false
	for _, ch := range str {
		switch {
		case ch < 0x20:
			return i + 1, false, false
		case ch >= 0x80:
			high = true
		}
	}
	if high && (!utf8.Valid(str) || bytes.Contains(str, []byte("\u2028")) || bytes.Contains(str, []byte("\u2029"))) {
		return q, false, false
	}
	return q + 1, false, true
}

// printableASCII reports whether every byte of b is printable ASCII or
// DEL (0x20 to 0x7F): no control character, nothing above ASCII. Eight
// bytes at a time: a byte below 0x20 borrows into its high bit when 0x20
// is taken from it, one from 0x80 up has it set already (a borrow carried
// into the next byte only follows a byte below 0x20, itself found).
func printableASCII(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	const low = ones * 0x20
	le := binary.LittleEndian
	for len(b) >= 32 {
		w0, w1, w2, w3 := le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
		if ((w0-low)|w0|(w1-low)|w1|(w2-low)|w2|(w3-low)|w3)&highs != 0 {
			return false
		}
		b = b[32:]
	}
	for len(b) >= 8 {
		if w := le.Uint64(b); ((w-low)|w)&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, ch := range b {
		if ch < 0x20 || ch >= 0x80 {
			return false
		}
	}
	return true
}

// scanEscaped is scanString for a string with a backslash in it.
func scanEscaped(s []byte, i int, key bool) (int, bool, bool) {
	j := i + 1
	esc, high := false, false
	for j < len(s) {
		// Eight bytes at a time while none is a quote, a backslash, a
		// control character or above ASCII.
		for j+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[j:])
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			q, bs := w^(ones*'"'), w^(ones*'\\')
			if ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)|w)&highs != 0 {
				break
			}
			j += 8
		}
		if j >= len(s) {
			break
		}
		ch := s[j]
		switch {
		case ch == '"':
			if high {
				str := s[i+1 : j]
				if !utf8.Valid(str) || bytes.Contains(str, []byte("\u2028")) || bytes.Contains(str, []byte("\u2029")) {
					return j, esc, false
				}
			}
			return j + 1, esc, true
		case ch == '\\':
			if key || j+1 >= len(s) {
				return j, true, false
			}
			switch s[j+1] {
			case '"', '\\', 'n', 'r', 't':
			default:
				return j, true, false
			}
			esc = true
			j += 2
			continue
		case ch < 0x20:
			return j, esc, false
		case ch >= 0x80:
			high = true
		}
		j++
	}
	return j, esc, false
}

// scanNumber returns the end of the JSON number at s[i] and whether it has
// a fraction or exponent; false when it is not one.
func scanNumber(s []byte, i int) (int, bool, bool) {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s) && s[j] == '0' {
		j++
	} else if digits() == 0 {
		return j, false, false
	}
	frac := false
	if j < len(s) && s[j] == '.' {
		j++
		frac = true
		if digits() == 0 {
			return j, frac, false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		frac = true
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return j, frac, false
		}
	}
	return j, frac, true
}
