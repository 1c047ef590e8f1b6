package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// RedactedMarker replaces redacted strings.
const RedactedMarker = "[REDACTED]"

// MetaRedacted is the _meta key that lists the paths redacted in a message
// (for example ["params.arguments.apiKey"]), so that replay can tell a
// redacted value from a recorded one.
const MetaRedacted = "redacted"

// MetaInjected is the _meta key that says what interception rules did to a
// message: a list of {rule, action, and original (the bytes before a
// change), injected (an answer the rule made up), dropped, audit, ...}.
// The message beside it is what went on the wire.
const MetaInjected = "injected"

// Redactor removes secrets from the tape's copy of messages. Rules:
//
//   - Keys: any object member with one of these names (compared without
//     regard to case), at any depth, has its value blanked.
//   - Paths: what each path names (ParsePath syntax, from the message root,
//     "*" for every key or element) is blanked.
//   - Values: every match of these expressions inside a string value, and
//     inside an object member's name, is replaced by the marker; the rest of
//     the string is kept.
//
// All three reach everywhere a secret can hide in a record:
//
//   - into a string that holds JSON (a tool's "text":"{\"apiKey\":…}"): it
//     is decoded, redacted by the same rules and encoded again;
//   - into the tape's own _meta, except the members that say what the record
//     is (dir, server, ts, redacted): a session id or an upstream URL there
//     is redacted like any other value;
//   - into a line that is no JSON (a stray stdout line, a torn last line):
//     value rules apply to its text, and a key rule blanks what follows the
//     key's name up to the end of its value, or of the line when the value
//     is an object or array cut short.
//
// Blanking keeps the JSON shape, so matchers and schemas still see the same
// structure: a string becomes the marker, a number 0, a boolean false, null
// stays null, and objects and arrays keep their members and elements, each
// blanked in turn. The zero Redactor changes nothing.
type Redactor struct {
	Keys   []string
	Paths  []Path
	Values []*regexp.Regexp
	// Marker replaces redacted strings; empty means RedactedMarker.
	Marker string
}

// NewRedactor builds a Redactor from command-line rules: key names, paths in
// ParsePath syntax and regular expressions in Go (RE2) syntax.
func NewRedactor(keys, paths, values []string) (*Redactor, error) {
	r := &Redactor{Keys: slices.Clone(keys)}
	for _, p := range paths {
		pp, err := ParsePath(p)
		if err != nil {
			return nil, fmt.Errorf("redact path: %w", err)
		}
		r.Paths = append(r.Paths, pp)
	}
	for _, v := range values {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, fmt.Errorf("redact value %q: expected a Go regular expression: %w", v, err)
		}
		r.Values = append(r.Values, re)
	}
	return r, nil
}

// Empty reports whether r has no rules.
func (r *Redactor) Empty() bool {
	return r == nil || len(r.Keys) == 0 && len(r.Paths) == 0 && len(r.Values) == 0
}

func (r *Redactor) marker() string {
	if r.Marker == "" {
		return RedactedMarker
	}
	return r.Marker
}

// Redact applies the rules to one message (a JSON object, without tape
// _meta) and returns it with the paths it redacted, in document order. When
// nothing matched, the message is returned unchanged, byte for byte;
// otherwise it is re-serialized (keys sorted, numbers kept exactly).
func (r *Redactor) Redact(msg []byte) ([]byte, []string, error) {
	if r.Empty() {
		return msg, nil, nil
	}
	v, err := Decode(msg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: redact: %v", ErrMalformed, err)
	}
	v, paths := r.apply(v)
	if len(paths) == 0 {
		return msg, nil, nil
	}
	out, err := marshalNoEscape(v)
	if err != nil {
		return nil, nil, err
	}
	return out, paths, nil
}

// RedactText applies the rules to text that is no JSON (a stderr line, an
// invalid frame, a torn line): value rules to all of it, key rules to what
// follows a quoted key name and a colon (see Redactor).
func (r *Redactor) RedactText(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, re := range r.Values {
		b = re.ReplaceAllLiteral(b, []byte(r.marker()))
	}
	for _, k := range r.Keys {
		b = r.redactKeyText(b, k)
	}
	return b
}

// redactKeyText blanks, in text, the value after each "key": (key compared
// without regard to case): a string up to its closing quote (or the end),
// a scalar up to the next delimiter, an object or array to the end of the
// text, since in text that is no JSON its end cannot be trusted.
func (r *Redactor) redactKeyText(b []byte, key string) []byte {
	quoted := []byte(strconv.Quote(key))
	lower := bytes.ToLower(b)
	lq := bytes.ToLower(quoted)
	var out []byte
	last := 0
	for i := 0; ; {
		j := bytes.Index(lower[i:], lq)
		if j < 0 {
			break
		}
		k := i + j + len(lq)
		v := skipWS(b, k)
		if v >= len(b) || b[v] != ':' {
			i = k
			continue
		}
		v = skipWS(b, v+1)
		end := len(b)
		switch {
		case v >= len(b):
		case b[v] == '"':
			if e, err := skipString(b, v); err == nil {
				end = e
			}
		case b[v] == '{' || b[v] == '[':
		default:
			end = v
			for end < len(b) && !isDelim(b[end]) && b[end] != ' ' {
				end++
			}
		}
		out = append(append(append(out, b[last:v]...), '"'), r.marker()...)
		out = append(out, '"')
		last, i = end, end
		if end >= len(b) {
			break
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// RedactLine applies the rules to one line of a tape, keeping its _meta
// (dir, server, ts and the rest are never redacted) and adding the redacted
// paths to _meta.redacted. A line that nothing matched is returned
// unchanged, with changed false; one that cannot be decoded (not JSON, or
// nested deeper than encoding/json reads) is an error wrapping ErrMalformed.
func (r *Redactor) RedactLine(line []byte) (out []byte, changed bool, err error) {
	if r.Empty() || len(bytes.TrimSpace(line)) == 0 {
		return line, false, nil
	}
	v, err := Decode(line)
	if err != nil {
		// Never pass a line through unredacted because it could not be
		// read: the caller decides (an invalid line gets RedactText).
		return nil, false, fmt.Errorf("%w: cannot decode the line to redact it: %v", ErrMalformed, err)
	}
	switch x := v.(type) {
	case map[string]any:
		changed = r.redactRecord(x)
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok && r.redactRecord(m) {
				changed = true
			}
		}
	}
	if !changed {
		return line, false, nil
	}
	out, err = marshalNoEscape(v)
	return out, true, err
}

// metaKept are the _meta members that say what a record is: never
// redacted, so a redacted tape reads and replays like the original.
var metaKept = []string{"dir", "server", "ts", MetaRedacted}

// redactRecord redacts a decoded tape record in place: the message, and its
// _meta but for metaKept; the paths redacted are added to the list in
// _meta.redacted.
func (r *Redactor) redactRecord(m map[string]any) bool {
	metaKey := "_meta" // the tape's; the message's own _meta is redacted with it
	if _, ok := m[AltMetaKey]; ok {
		metaKey = AltMetaKey
	}
	meta, hasMeta := m[metaKey]
	delete(m, metaKey)
	_, paths := r.apply(m)
	mm, isObject := meta.(map[string]any)
	if isObject {
		kept := map[string]any{}
		for _, k := range metaKept {
			if v, ok := mm[k]; ok {
				kept[k] = v
				delete(mm, k)
			}
		}
		var metaPaths []string
		r.walk(mm, []string{"_meta"}, &metaPaths)
		for _, p := range r.Paths {
			if len(p) > 1 && p[0] == "_meta" && !slices.Contains(metaKept, p[1]) {
				r.blankPath(mm, p[1:], []string{"_meta"}, &metaPaths)
			}
		}
		paths = append(paths, metaPaths...)
		maps.Copy(mm, kept)
	}
	if hasMeta {
		m[metaKey] = meta
	}
	if len(paths) == 0 {
		return false
	}
	if !isObject {
		mm = map[string]any{}
		m[metaKey] = mm
	}
	var all []string
	if prev, ok := mm[MetaRedacted].([]any); ok {
		for _, p := range prev {
			if s, ok := p.(string); ok {
				all = append(all, s)
			}
		}
	}
	for _, p := range paths {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	mm[MetaRedacted] = all
	return true
}

// apply redacts v in place (v's root may be replaced) and returns it with
// the redacted paths.
func (r *Redactor) apply(v any) (any, []string) {
	var paths []string
	v = r.walk(v, nil, &paths)
	for _, p := range r.Paths {
		v = r.blankPath(v, p, nil, &paths)
	}
	return v, paths
}

func (r *Redactor) walk(v any, at []string, paths *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e := x[k]
			if nk := r.redactString(k); nk != k {
				// A secret in a member's name: the member is kept under
				// the redacted name (the first one, if several collide).
				delete(x, k)
				*paths = append(*paths, pathString(append(at, nk)))
				if _, taken := x[nk]; taken {
					continue
				}
				x[nk], k = e, nk
			}
			p := append(at, k)
			if r.keyMatches(k) {
				x[k] = r.blank(e)
				*paths = append(*paths, pathString(p))
				continue
			}
			x[k] = r.walk(e, p, paths)
		}
	case []any:
		for i, e := range x {
			x[i] = r.walk(e, append(at, strconv.Itoa(i)), paths)
		}
	case string:
		if s, ok := r.redactEmbedded(x); ok {
			*paths = append(*paths, pathString(at))
			return s
		}
		if s := r.redactString(x); s != x {
			*paths = append(*paths, pathString(at))
			return s
		}
	}
	return v
}

// redactString applies the value rules to s.
func (r *Redactor) redactString(s string) string {
	for _, re := range r.Values {
		s = re.ReplaceAllLiteralString(s, r.marker())
	}
	return s
}

// redactEmbedded redacts a string that holds a JSON object or array (a
// tool's text content often does) by the same rules, and reports whether
// anything in it was redacted.
func (r *Redactor) redactEmbedded(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || (t[0] != '{' || t[len(t)-1] != '}') && (t[0] != '[' || t[len(t)-1] != ']') {
		return s, false
	}
	v, err := Decode([]byte(t))
	if err != nil {
		return s, false
	}
	v, inner := r.apply(v)
	if len(inner) == 0 {
		return s, false
	}
	out, err := marshalNoEscape(v)
	if err != nil {
		return s, false
	}
	return string(out), true
}

func (r *Redactor) keyMatches(k string) bool {
	for _, name := range r.Keys {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// blankPath blanks what p names in v (reached through at).
func (r *Redactor) blankPath(v any, p Path, at []string, paths *[]string) any {
	if len(p) == 0 {
		if !slices.Contains(*paths, pathString(at)) {
			*paths = append(*paths, pathString(at))
		}
		return r.blank(v)
	}
	switch x := v.(type) {
	case map[string]any:
		if p[0] == "*" {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				x[k] = r.blankPath(x[k], p[1:], append(at, k), paths)
			}
		} else if e, ok := x[p[0]]; ok {
			x[p[0]] = r.blankPath(e, p[1:], append(at, p[0]), paths)
		}
	case []any:
		for i, e := range x {
			if p[0] == "*" || p[0] == strconv.Itoa(i) {
				x[i] = r.blankPath(e, p[1:], append(at, strconv.Itoa(i)), paths)
			}
		}
	}
	return v
}

// blank replaces every scalar in v by the placeholder of its type.
func (r *Redactor) blank(v any) any {
	switch x := v.(type) {
	case string:
		return r.marker()
	case json.Number:
		return json.Number("0")
	case bool:
		return false
	case map[string]any:
		for k, e := range x {
			x[k] = r.blank(e)
		}
	case []any:
		for i, e := range x {
			x[i] = r.blank(e)
		}
	}
	return v
}

// pathString writes a path as ParsePath reads it: "params.items[0].token".
func pathString(p []string) string {
	var b strings.Builder
	for i, s := range p {
		if _, err := strconv.Atoi(s); err == nil && i > 0 {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// IsCredentialHeader reports whether an HTTP header carries credentials and
// must never be written to a tape: Authorization, Proxy-Authorization,
// Cookie, Set-Cookie, and any header whose name mentions a key, token,
// secret, password or auth (X-Api-Key, X-Auth-Token, Api-Key, ...). A
// challenge (WWW-Authenticate, Proxy-Authenticate) carries none: a scheme,
// a realm, scopes, the resource metadata URL, which replay needs.
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	case "www-authenticate", "proxy-authenticate":
		return false
	}
	for _, s := range []string{"api-key", "apikey", "api_key", "token", "secret", "password", "auth", "credential", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
