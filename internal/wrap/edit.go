package wrap

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Edit is one server entry wrapped: where it is, its bytes before and
// after, and the whole configuration after.
type Edit struct {
	Server   string
	Where    []string // the member names of the map holding the entry
	Original []byte   // the entry's value as it was
	Wrapped  []byte   // the entry's value as wrap wrote it
	Data     []byte   // the configuration with the entry wrapped
	Command  []string // what the wrapped entry runs: exe, record, ...
}

// Wrap rewrites the stdio server entry called name so that it runs exe (the
// tapedeck binary) with "record --server NAME -- COMMAND ARGS...": the
// entry's command becomes exe, its args are prefixed, and everything else in
// it (env, cwd, type, comments) stays. Only the entry's bytes change.
//
// It refuses an entry that is not there (listing the servers that are), an
// HTTP one (url, serverUrl, type http or sse: a configuration cannot start
// the recording proxy), and one already wrapped.
func (c *Config) Wrap(name, exe string) (*Edit, error) {
	e, err := c.find(name)
	if err != nil {
		return nil, err
	}
	obj, ok := e.value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s: server %q under %s: %w: expected an object, found %s", c.Path, name, Place(e.where), ErrParse, kindName(e.value.Value.Kind()))
	}
	cmdV := member(obj, "command")
	if cmdV == nil {
		if u, typ := urlOf(obj); u != "" || typ != "" {
			if u == "" {
				u = "URL"
			}
			return nil, fmt.Errorf("%s: server %q is %w (%s), which the client connects to itself: a configuration cannot start tapedeck's recording proxy for it; run\n  tapedeck record --upstream %s --listen 127.0.0.1:7777\nand point the client at the address it prints instead", c.Path, name, ErrURL, strings.TrimSpace(u+" "+typ), shellQuote(u))
		}
		return nil, fmt.Errorf("%s: server %q under %s: %w: expected a \"command\" (a stdio server) or a \"url\", found members %s", c.Path, name, Place(e.where), ErrParse, listOr(quoteAll(names(obj)), "none"))
	}
	cmd, ok := cmdV.Value.(hujson.Literal)
	if !ok || cmd.Kind() != '"' {
		return nil, fmt.Errorf("%s: server %q: %w: expected \"command\" to be a string, found %s", c.Path, name, ErrParse, kindName(cmdV.Value.Kind()))
	}
	argsV := member(obj, "args")
	if argsV != nil {
		if _, ok := argsV.Value.(*hujson.Array); !ok {
			return nil, fmt.Errorf("%s: server %q: %w: expected \"args\" to be an array, found %s", c.Path, name, ErrParse, kindName(argsV.Value.Kind()))
		}
	}
	if looksWrapped(obj) {
		return nil, fmt.Errorf("%s: server %q is %w: it runs %s record; \"tapedeck unwrap %s\" puts it back", c.Path, name, ErrWrapped, cmd.String(), name)
	}

	// A tree of the entry's own bytes to edit (hujson's Clone would lose
	// trailing commas, which are marked by empty but non-nil extras).
	v, err := hujson.Parse(bytes.Clone(e.raw(c.data)))
	if err != nil {
		return nil, fmt.Errorf("%s: server %q: %w", c.Path, name, err)
	}
	wobj := v.Value.(*hujson.Object)
	compact := len(member(wobj, "command").BeforeExtra) == 0
	member(wobj, "command").Value = hujson.String(exe)
	prefix := []hujson.Literal{hujson.String("record"), hujson.String("--server"), hujson.String(name), hujson.String("--"), append(hujson.Literal(nil), cmd...)}
	if a := member(wobj, "args"); a != nil && len(a.Value.(*hujson.Array).Elements) > 0 {
		prepend(a.Value.(*hujson.Array), prefix, compact)
	} else if a != nil {
		a.Value = newArray(prefix, compact)
	} else {
		insertArgs(wobj, newArray(prefix, compact), compact)
	}
	wrapped := v.Pack()

	out := splice(c.data, e.start, e.end, wrapped)
	// The result must read back, with the entry where it was.
	check, err := Parse(c.Path, c.Client, c.Cwd, out)
	if err != nil {
		return nil, fmt.Errorf("%s: wrapping %q made a configuration that does not parse (a bug in tapedeck): %w", c.Path, name, err)
	}
	if _, err := check.findAt(e.where, name); err != nil {
		return nil, fmt.Errorf("%s: wrapping %q lost the entry (a bug in tapedeck): %w", c.Path, name, err)
	}
	command := []string{exe, "record", "--server", name, "--", cmd.String()}
	if argsV != nil {
		for _, el := range argsV.Value.(*hujson.Array).Elements {
			if lit, ok := el.Value.(hujson.Literal); ok {
				command = append(command, lit.String())
			}
		}
	}
	return &Edit{
		Server: name, Where: e.where,
		Original: bytes.Clone(e.raw(c.data)), Wrapped: wrapped,
		Data: out, Command: command,
	}, nil
}

// Unwrap puts back the entry b holds: the bytes wrap replaced are spliced in
// for the wrapped entry. An entry changed since it was wrapped is refused
// unless force.
func (c *Config) Unwrap(b Backup, force bool) ([]byte, error) {
	e, err := c.findAt(b.Where, b.Server)
	if err != nil {
		return nil, err
	}
	cur := e.raw(c.data)
	if !force && !bytes.Equal(cur, []byte(b.Wrapped)) {
		return nil, fmt.Errorf("%s: server %q was %w: expected the entry tapedeck wrap wrote,\n  %s\nfound\n  %s\n--force puts the original back anyway, losing the change", c.Path, b.Server, ErrChanged, oneLine(b.Wrapped), oneLine(string(cur)))
	}
	out := splice(c.data, e.start, e.end, []byte(b.Original))
	if _, err := Parse(c.Path, c.Client, c.Cwd, out); err != nil {
		return nil, fmt.Errorf("%s: putting %q back made a configuration that does not parse (is the backup damaged?): %w", c.Path, b.Server, err)
	}
	return out, nil
}

// IsWrapped says whether the server called name runs through tapedeck
// record; an error when there is no such server.
func (c *Config) IsWrapped(name string) (bool, error) {
	e, err := c.find(name)
	if err != nil {
		return false, err
	}
	obj, ok := e.value.Value.(*hujson.Object)
	return ok && looksWrapped(obj), nil
}

// entryAt returns the bytes of the entry name in the map at where, or nil.
func (c *Config) entryAt(where []string, name string) []byte {
	e, err := c.findAt(where, name)
	if err != nil {
		return nil
	}
	return e.raw(c.data)
}

// looksWrapped: the command is a tapedeck binary and the first argument
// "record".
func looksWrapped(obj *hujson.Object) bool {
	cmdV, argsV := member(obj, "command"), member(obj, "args")
	if cmdV == nil || argsV == nil {
		return false
	}
	cmd, ok := cmdV.Value.(hujson.Literal)
	arr, ok2 := argsV.Value.(*hujson.Array)
	if !ok || !ok2 || len(arr.Elements) == 0 {
		return false
	}
	first, ok := arr.Elements[0].Value.(hujson.Literal)
	base := strings.TrimSuffix(filepath.Base(cmd.String()), ".exe")
	return ok && first.String() == "record" && strings.HasPrefix(base, "tapedeck")
}

// urlOf returns the URL of an HTTP entry (url, serverUrl, httpUrl) and its
// type when it says http or sse.
func urlOf(obj *hujson.Object) (u, typ string) {
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if v := member(obj, k); v != nil {
			if lit, ok := v.Value.(hujson.Literal); ok {
				u = lit.String()
				break
			}
		}
	}
	if v := member(obj, "type"); v != nil {
		if lit, ok := v.Value.(hujson.Literal); ok {
			switch t := lit.String(); t {
			case "http", "sse", "streamable-http", "streamableHttp":
				typ = "type " + t
			}
		}
	}
	return u, typ
}

// prepend puts lits before arr's elements in the array's own layout: one a
// line when the elements are, else on one line.
func prepend(arr *hujson.Array, lits []hujson.Literal, compact bool) {
	old := arr.Elements
	first := old[0].BeforeExtra
	var sep []byte
	switch {
	case len(old) > 1:
		sep = indentOf(old[1].BeforeExtra)
	case bytes.ContainsRune(first, '\n'):
		sep = indentOf(first)
	case compact:
		sep = []byte{}
	default:
		sep = []byte(" ")
	}
	elems := make([]hujson.Value, 0, len(lits)+len(old))
	for i, lit := range lits {
		before := bytes.Clone(sep)
		if i == 0 {
			before = indentOf(first)
		}
		elems = append(elems, hujson.Value{BeforeExtra: before, Value: lit})
	}
	if isSpace(first) {
		old[0].BeforeExtra = bytes.Clone(sep)
	}
	arr.Elements = append(elems, old...)
}

// newArray is ["a", "b", ...], or ["a","b"] in a compact file.
func newArray(lits []hujson.Literal, compact bool) *hujson.Array {
	arr := &hujson.Array{}
	for i, lit := range lits {
		var before hujson.Extra
		if i > 0 && !compact {
			before = hujson.Extra(" ")
		}
		arr.Elements = append(arr.Elements, hujson.Value{BeforeExtra: before, Value: lit})
	}
	return arr
}

// insertArgs adds "args": arr after the command member, laid out like it.
func insertArgs(obj *hujson.Object, arr *hujson.Array, compact bool) {
	i := 0
	for j := range obj.Members {
		if lit, ok := obj.Members[j].Name.Value.(hujson.Literal); ok && lit.String() == "command" {
			i = j
		}
	}
	cmd := obj.Members[i]
	// The space before a member name: the command's, unless it follows the
	// brace, where the next member's says more.
	var before []byte
	switch {
	case i > 0:
		before = indentOf(cmd.Name.BeforeExtra)
	case len(obj.Members) > 1:
		before = indentOf(obj.Members[1].Name.BeforeExtra)
	case bytes.ContainsRune(cmd.Name.BeforeExtra, '\n') || compact:
		before = indentOf(cmd.Name.BeforeExtra)
	default:
		before = []byte(" ")
	}
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.String("args")},
		Value: hujson.Value{BeforeExtra: indentOf(cmd.Value.BeforeExtra), Value: arr},
	}
	if i == len(obj.Members)-1 && cmd.Value.AfterExtra != nil {
		m.Value.AfterExtra = hujson.Extra{} // keep the trailing comma
	}
	obj.Members = slices.Insert(obj.Members, i+1, m)
}

// indentOf is the white space that starts a new item laid out like the one
// extra precedes: a newline and its indentation, or the spaces, without the
// comments.
func indentOf(extra []byte) []byte {
	if i := bytes.LastIndexByte(extra, '\n'); i >= 0 {
		nl := []byte("\n")
		if i > 0 && extra[i-1] == '\r' {
			nl = []byte("\r\n")
		}
		if tail := extra[i+1:]; isSpace(tail) {
			return append(nl, tail...)
		}
		return nl
	}
	if isSpace(extra) {
		return bytes.Clone(extra)
	}
	return []byte(" ")
}

func isSpace(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

func splice(data []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(with))
	out = append(out, data[:start]...)
	out = append(out, with...)
	return append(out, data[end:]...)
}

func oneLine(s string) string {
	f := strings.Fields(s)
	out := strings.Join(f, " ")
	if len(out) > 300 {
		out = out[:300] + "…"
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
