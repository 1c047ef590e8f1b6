package importer

import (
	"bytes"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// stdUnescape is jsonscan.Unescape (s a JSON string's bytes between its
// quotes that strEnd accepted, read as encoding/json reads it) with the
// runs between escapes copied whole when s is valid UTF-8: only each run
// of escapes is decoded (a surrogate pair is one run), instead of every
// byte looked at again.
func stdUnescape(dst, s []byte) []byte {
	if !utf8.Valid(s) {
		return jsonscan.Unescape(dst, s)
	}
	for len(s) > 0 {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:k]...)
		s = s[k:]
		j := 0
		for j+1 < len(s) && s[j] == '\\' {
			if s[j+1] == 'u' {
				j += 6
			} else {
				j += 2
			}
		}
		j = min(j, len(s))
		dst = jsonscan.Unescape(dst, s[:j])
		s = s[j:]
	}
	return dst
}
