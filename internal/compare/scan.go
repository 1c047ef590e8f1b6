package compare

import "bytes"

// A message's members found by a scan of its bytes that decodes nothing:
// strings are skipped with bytes.IndexByte, containers by their depth. The
// messages scanned were classified by the tape's index, which checked their
// structure (strings closed, brackets matched); what the scan finds is what
// gjson finds (the first top-level member of a name), and where it cannot
// be sure (a key with an escape, which gjson unescapes) it says so and the
// caller asks gjson.

// valueStart returns where the value of the first top-level member named
// key of the object msg starts. found is false when msg has no such member;
// ok is false when the scan cannot tell.
func valueStart(msg []byte, key string) (start int, found, ok bool) {
	i := skipWS(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return 0, false, false
	}
	i = skipWS(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return 0, false, true
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return 0, false, false
		}
		kend, ok := skipStr(msg, i)
		if !ok {
			return 0, false, false
		}
		k := msg[i+1 : kend-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, false, false
		}
		i = skipWS(msg, kend)
		if i >= len(msg) || msg[i] != ':' {
			return 0, false, false
		}
		i = skipWS(msg, i+1)
		if string(k) == key {
			return i, true, true
		}
		if i, ok = skipValue(msg, i); !ok {
			return 0, false, false
		}
		i = skipWS(msg, i)
		if i < len(msg) && msg[i] == ',' {
			i = skipWS(msg, i+1)
			continue
		}
		if i < len(msg) && msg[i] == '}' {
			return 0, false, true
		}
		return 0, false, false
	}
}

// memberValue returns the value of the first top-level member named key of
// the object msg (gjson's Result.Raw), found and ok as valueStart's.
func memberValue(msg []byte, key string) (v []byte, found, ok bool) {
	start, found, ok := valueStart(msg, key)
	if !found || !ok {
		return nil, found, ok
	}
	end, ok := skipValue(msg, start)
	if !ok {
		return nil, true, false
	}
	return msg[start:end], true, true
}

// memberEnds reports whether the member value that ended at msg[i] ends
// there: the next byte (after white space) is a ',' or a '}'.
func memberEnds(msg []byte, i int) bool {
	i = skipWS(msg, i)
	return i < len(msg) && (msg[i] == ',' || msg[i] == '}')
}

// skipStr returns the index after the string starting at s[i] == '"'.
func skipStr(s []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s), false
		}
		q := j + k
		bs := 0
		for p := q - 1; p > i && s[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// skipValue returns the index after the JSON value starting at s[i].
func skipValue(s []byte, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch s[i] {
	case '"':
		return skipStr(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				j, ok := skipStr(s, i)
				if !ok {
					return j, false
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n', ':':
			return j, j > i
		}
		j++
	}
	return j, j > i
}
