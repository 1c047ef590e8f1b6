package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Decode parses JSON keeping numbers exact (as json.Number).
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("expected one JSON value, found more after offset %d", dec.InputOffset())
	}
	return v, nil
}

// Canonical returns the canonical form of a JSON value: object keys sorted,
// no whitespace, numbers written by value (1.0, 1e0 and 1 are the same),
// unicode kept as UTF-8 rather than escaped. Two values mean the same exactly
// when their canonical forms are equal.
func Canonical(raw []byte) ([]byte, error) {
	v, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	return CanonicalValue(v)
}

// CanonicalValue is Canonical for a value already decoded with Decode.
func CanonicalValue(v any) ([]byte, error) {
	return marshalNoEscape(canonicalNumbers(v))
}

// EqualJSON reports whether two JSON texts mean the same.
func EqualJSON(a, b []byte) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonicalNumbers(e)
		}
	case json.Number:
		return json.Number(CanonicalNumber(string(x)))
	}
	return v
}

// CanonicalNumber writes a JSON number by value: integers exactly, whatever
// their size; other numbers exactly when they are integral, else in the
// shortest form that reads back as the same float64.
func CanonicalNumber(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return "0"
		}
		return s
	}
	if exp := strings.IndexAny(s, "eE"); exp >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(s[exp+1:], "+")); err != nil || e > 400 || e < -400 {
			return strings.ToLower(s) // beyond float64: exact rationals would be huge; keep the text
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	out := strconv.FormatFloat(f, 'g', -1, 64)
	// A fraction too fine for a float64 can round to a whole number
	// ("10000000000000000.1" to 1e+16): written as the integer it is, as
	// "1e+16" itself is, so that the form is the same on a second pass.
	if g, ok := new(big.Rat).SetString(out); ok && g.IsInt() {
		return g.Num().String()
	}
	return out
}

// volatileMetaKeys are the request params._meta keys that change on every
// run and say nothing of what was asked. Keys starting with
// "io.modelcontextprotocol/" (the 2026-07-28 identity keys) are volatile too.
var volatileMetaKeys = [...]string{"progressToken", "traceparent", "tracestate", "baggage"}

// VolatileMetaKey reports whether k is one of the volatile params._meta
// keys the Normalizer drops.
func VolatileMetaKey(k string) bool {
	return slices.Contains(volatileMetaKeys[:], k) || strings.HasPrefix(k, "io.modelcontextprotocol/")
}

// Normalizer turns messages into comparable values: it drops what identifies
// a message on the wire (jsonrpc, id, the tape's _meta), the volatile keys of
// params._meta, and the user's ignored paths.
type Normalizer struct {
	// Ignore lists paths to drop before comparing (see ParsePath).
	Ignore []Path
	// KeepVolatile keeps params._meta's volatile keys.
	KeepVolatile bool
	// Exact tells an empty optional object from an absent one. By default
	// an absent params.arguments (of tools/call and prompts/get, the calls
	// that name something) and params.context (of completion/complete) read
	// as {}, and an empty params._meta, and then empty params, as absent:
	// SDKs differ there without meaning anything (the TypeScript client
	// sends "arguments":{} where mcp-go sends none, mcp-go always sends
	// completion's "context":{} and a list request's "params":{}, which the
	// go-sdk leaves out).
	// Filling rather than dropping keeps a diff precise: {} against
	// {"message":"hi"} shows params.arguments.message.
	Exact bool
}

// forgiveEmptyOptional makes an absent optional object and {} one value
// (see Normalizer.Exact).
func forgiveEmptyOptional(params map[string]any) {
	fill := func(k string) {
		if _, ok := params[k]; !ok {
			params[k] = map[string]any{}
		}
	}
	if _, ok := params["name"]; ok {
		fill("arguments")
	}
	if _, ok := params["ref"]; ok {
		fill("context")
	}
	if m, ok := params["_meta"].(map[string]any); ok && len(m) == 0 {
		delete(params, "_meta")
	}
}

// Normalize decodes a message and returns its comparable form (a value from
// Decode, with numbers canonical). The message's bytes are not changed.
func (n *Normalizer) Normalize(msg []byte) (any, error) {
	v, err := Decode(msg)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return canonicalNumbers(v), nil
	}
	delete(obj, "jsonrpc")
	delete(obj, "id")
	delete(obj, "_meta")
	delete(obj, AltMetaKey)
	if p, ok := obj["params"].(map[string]any); ok {
		if !n.KeepVolatile {
			dropVolatile(p)
		}
		if !n.Exact {
			forgiveEmptyOptional(p)
			if len(p) == 0 {
				delete(obj, "params")
			}
		}
	}
	for _, p := range n.Ignore {
		p.Delete(obj)
	}
	return canonicalNumbers(obj), nil
}

// NormalizeParams is Normalize for a params value alone; ignore paths are
// still written from the message's root ("params.arguments.ts").
func (n *Normalizer) NormalizeParams(params []byte) (any, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		params = []byte("null")
	}
	v, err := Decode(params)
	if err != nil {
		return nil, err
	}
	root := map[string]any{"params": v}
	if p, ok := v.(map[string]any); ok {
		if !n.KeepVolatile {
			dropVolatile(p)
		}
		if !n.Exact {
			forgiveEmptyOptional(p)
			if len(p) == 0 {
				root["params"] = nil // as absent params read
			}
		}
	}
	for _, p := range n.Ignore {
		p.Delete(root)
	}
	return canonicalNumbers(root["params"]), nil
}

func dropVolatile(params map[string]any) {
	meta, ok := params["_meta"].(map[string]any)
	if !ok {
		return
	}
	for k := range meta {
		if VolatileMetaKey(k) {
			delete(meta, k)
		}
	}
	if len(meta) == 0 {
		delete(params, "_meta")
	}
}

// Path is a location in a JSON value, parsed by ParsePath.
type Path []string

// ParsePath parses a dotted path from a message's root: "params.arguments.ts",
// "result.content[0].text", "result.items[*].id" or "$.params.x". A "*"
// segment matches every key of an object or every element of an array.
func ParsePath(s string) (Path, error) {
	orig := s
	s = strings.TrimPrefix(strings.TrimPrefix(s, "$"), ".")
	if s == "" {
		return nil, fmt.Errorf("empty JSON path %q: expected segments like params.arguments.ts", orig)
	}
	var p Path
	for _, part := range strings.Split(s, ".") {
		for part != "" {
			open := strings.IndexByte(part, '[')
			if open < 0 {
				p = append(p, part)
				break
			}
			if open > 0 {
				p = append(p, part[:open])
			}
			close := strings.IndexByte(part[open:], ']')
			if close < 0 {
				return nil, fmt.Errorf("JSON path %q: expected ']' after '[' in %q", orig, part)
			}
			p = append(p, part[open+1:open+close])
			part = part[open+close+1:]
		}
		if part == "" && len(p) == 0 {
			return nil, fmt.Errorf("JSON path %q: empty segment", orig)
		}
	}
	return p, nil
}

func (p Path) String() string { return strings.Join(p, ".") }

// Delete removes what the path names from v (a value from Decode).
func (p Path) Delete(v any) {
	if len(p) == 0 {
		return
	}
	last := len(p) == 1
	switch x := v.(type) {
	case map[string]any:
		if p[0] == "*" {
			for k := range x {
				if last {
					delete(x, k)
				} else {
					p[1:].Delete(x[k])
				}
			}
			return
		}
		if last {
			delete(x, p[0])
		} else if e, ok := x[p[0]]; ok {
			p[1:].Delete(e)
		}
	case []any:
		for i, e := range x {
			if p[0] == "*" || p[0] == strconv.Itoa(i) {
				if last {
					x[i] = nil // arrays keep their length; the element is blanked
				} else {
					p[1:].Delete(e)
				}
			}
		}
	}
}

// StripMeta returns msg without the tape's metadata (see RecordMeta): the
// message as it crossed the wire, its own top-level "_meta" included when it
// had one. The other bytes are kept as they are.
func StripMeta(msg []byte) []byte {
	cut, first, ok := recordMetaMember(msg)
	if !ok {
		return msg
	}
	return spliceOut(msg, cut, first)
}

// RecordMeta returns the tape's metadata object of a record ({dir, server,
// ts, ...}), or nil when it has none: the last top-level AltMetaKey member
// if there is one, else the last "_meta" (tapes written before AltMetaKey
// existed appended the tape's "_meta" after the message's own).
func RecordMeta(line []byte) []byte {
	var c classifier
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil
	}
	var meta, alt span
	_, err := c.members(line, i, func(key []byte, v span) {
		switch string(key) {
		case "_meta":
			meta = v
		case AltMetaKey:
			alt = v
		}
	})
	if err != nil {
		return nil
	}
	if alt.ok() {
		return alt.in(line)
	}
	if meta.ok() {
		return meta.in(line)
	}
	return nil
}

// recordMetaMember finds the member RecordMeta reads: its span from the end
// of the previous value (or just inside the brace) to the end of its value,
// and whether it is the first member.
func recordMetaMember(msg []byte) (cut span, first, ok bool) {
	var c classifier
	i := skipWS(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return span{}, false, false
	}
	prevEnd, isFirst := i+1, true
	var meta, alt span
	var metaFirst, altFirst bool
	_, err := c.members(msg, i, func(key []byte, v span) {
		switch string(key) {
		case "_meta":
			meta, metaFirst = span{prevEnd, v.end}, isFirst
		case AltMetaKey:
			alt, altFirst = span{prevEnd, v.end}, isFirst
		}
		isFirst = false
		prevEnd = v.end
	})
	switch {
	case err != nil:
		return span{}, false, false
	case alt.ok():
		return alt, altFirst, true
	case meta.ok():
		return meta, metaFirst, true
	}
	return span{}, false, false
}
