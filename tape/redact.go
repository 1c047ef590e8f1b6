package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// Redactor removes secrets from the tape's copy of messages. Rules:
//
//   - Keys: any object member with one of these names (compared without
//     regard to case), at any depth, has its value blanked.
//   - Paths: what each path names (ParsePath syntax, from the message root,
//     "*" for every key or element) is blanked.
//   - Values: every match of these expressions inside a string value is
//     replaced by the marker; the rest of the string is kept.
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

// RedactText applies the value rules to plain text (a stderr line, an
// invalid frame).
func (r *Redactor) RedactText(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, re := range r.Values {
		b = re.ReplaceAllLiteral(b, []byte(r.marker()))
	}
	return b
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

// redactRecord redacts a decoded tape record in place, leaving its _meta
// alone but for the list of redacted paths.
func (r *Redactor) redactRecord(m map[string]any) bool {
	meta, hasMeta := m["_meta"]
	delete(m, "_meta")
	_, paths := r.apply(m)
	if hasMeta {
		m["_meta"] = meta
	}
	if len(paths) == 0 {
		return false
	}
	mm, ok := meta.(map[string]any)
	if !ok {
		mm = map[string]any{}
		m["_meta"] = mm
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
			p := append(at, k)
			if r.keyMatches(k) {
				x[k] = r.blank(x[k])
				*paths = append(*paths, pathString(p))
				continue
			}
			x[k] = r.walk(x[k], p, paths)
		}
	case []any:
		for i, e := range x {
			x[i] = r.walk(e, append(at, strconv.Itoa(i)), paths)
		}
	case string:
		if len(r.Values) == 0 {
			return v
		}
		s := x
		for _, re := range r.Values {
			s = re.ReplaceAllLiteralString(s, r.marker())
		}
		if s != x {
			*paths = append(*paths, pathString(at))
			return s
		}
	}
	return v
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
// secret, password or auth (X-Api-Key, X-Auth-Token, Api-Key, ...).
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "www-authenticate", "proxy-authenticate":
		return true
	}
	for _, s := range []string{"api-key", "apikey", "api_key", "token", "secret", "password", "auth", "credential", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
