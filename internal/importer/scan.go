package importer

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A small scanner of documents already known to be valid JSON (checked
// once, whole, with gjson.ValidBytes): the line-based importers read an
// envelope's members with it instead of decoding the envelope with
// encoding/json, and take a message's bytes as they are.

// eachMember calls f with the key (unescaped) and the raw value of each
// member of obj, a valid JSON object, in order; a later duplicate is
// passed after an earlier one, so keeping the last one read is
// encoding/json's "last wins". It reports false when obj is not an
// object.
func eachMember(obj []byte, f func(key string, val []byte)) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return true
		}
		if obj[i] == ',' {
			i++
			continue
		}
		ks := i
		i = skipString(obj, i)
		key := obj[ks+1 : i-1]
		i = skipSpace(obj, i)
		i++ // ':'
		i = skipSpace(obj, i)
		vs := i
		i = skipScalarOrNested(obj, i)
		f(unquoteKey(key), obj[vs:i])
	}
}

func unquoteKey(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) != nil {
		return string(k)
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipScalarOrNested returns the index after the value starting at b[i].
func skipScalarOrNested(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// plainString returns the text of raw, a JSON string that holds no escape
// and only valid UTF-8, whose text is then its bytes; ok false otherwise
// (decode it with encoding/json).
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	in := raw[1 : n-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}
