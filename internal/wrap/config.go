// Package wrap rewrites an MCP client's configuration so that one of its
// servers runs through "tapedeck record", and puts the entry back as it was.
//
// The edit is a splice: the server's entry is found with a JSONC parser
// (github.com/tailscale/hujson, which keeps every comment, comma and space of
// the input), and only the bytes of that entry's value are replaced. The
// original bytes of the entry go into a backup (see [Backups]); unwrapping
// splices them back, so the file is again what it was, byte for byte.
//
// The functions over bytes ([Parse], [Config.Wrap], [Config.Unwrap]) do no
// I/O; [WrapFile] and [UnwrapFile] read and write the files, each write to a
// temporary file in the same directory and a rename, through a symbolic link
// to its target.
package wrap

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// Client is an MCP client whose configuration wrap knows.
type Client string

// The clients, in the order [Find] tries them.
const (
	ClaudeDesktop Client = "claude-desktop"
	ClaudeCode    Client = "claude-code"
	Cursor        Client = "cursor"
	VSCode        Client = "vscode"
	Windsurf      Client = "windsurf"
)

// Clients returns the clients wrap knows, in the order [Find] tries them.
func Clients() []Client {
	return []Client{ClaudeDesktop, ClaudeCode, Cursor, VSCode, Windsurf}
}

// ParseClient returns the client named s.
func ParseClient(s string) (Client, error) {
	for _, c := range Clients() {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, 0, 5)
	for _, c := range Clients() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("unknown client %q: expected one of %s", s, strings.Join(names, ", "))
}

// Env is what the default configuration paths depend on.
type Env struct {
	Home string // the user's home directory ($HOME)
	// ConfigDir is $XDG_CONFIG_HOME when set (Linux); empty means
	// Home/.config. On macOS and Windows the platform's own place is used.
	ConfigDir string
	AppData   string // %APPDATA% (Windows)
	Cwd       string // the working directory: project configs, claude-code's projects
	GOOS      string // runtime.GOOS when empty
}

// Candidate is a configuration file a client reads.
type Candidate struct {
	Client Client
	Path   string
}

// DefaultPaths returns the configuration files of c, in the order the
// client's own precedence suggests (a project's file before the user's).
func DefaultPaths(c Client, e Env) []string {
	goos := e.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	switch c {
	case ClaudeDesktop:
		switch goos {
		case "darwin":
			return []string{filepath.Join(e.Home, "Library", "Application Support", "Claude", "claude_desktop_config.json")}
		case "windows":
			return []string{filepath.Join(e.AppData, "Claude", "claude_desktop_config.json")}
		}
		dir := e.ConfigDir
		if dir == "" || !filepath.IsAbs(dir) {
			dir = filepath.Join(e.Home, ".config")
		}
		return []string{filepath.Join(dir, "Claude", "claude_desktop_config.json")}
	case ClaudeCode:
		// ~/.claude.json holds the user's servers and, under
		// projects.<dir>, each project's local ones; .mcp.json a project's
		// shared ones.
		return []string{filepath.Join(e.Home, ".claude.json"), filepath.Join(e.Cwd, ".mcp.json")}
	case Cursor:
		return []string{filepath.Join(e.Cwd, ".cursor", "mcp.json"), filepath.Join(e.Home, ".cursor", "mcp.json")}
	case VSCode:
		return []string{filepath.Join(e.Cwd, ".vscode", "mcp.json")}
	case Windsurf:
		return []string{filepath.Join(e.Home, ".codeium", "windsurf", "mcp_config.json")}
	}
	return nil
}

// GuessClient names the client whose configuration path looks like path,
// or "" when the name says nothing.
func GuessClient(path string) Client {
	base := filepath.Base(path)
	parent := filepath.Base(filepath.Dir(path))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case base == ".claude.json" || base == ".mcp.json":
		return ClaudeCode
	case base == "mcp_config.json" && parent == "windsurf":
		return Windsurf
	case base == "mcp.json" && parent == ".cursor":
		return Cursor
	case base == "mcp.json" && parent == ".vscode":
		return VSCode
	}
	return ""
}

// serverMaps returns where c keeps its servers, as member names from the
// root, most specific first. "" (a client not known) tries every place.
func serverMaps(c Client, cwd string) [][]string {
	project := []string{"projects", cwd, "mcpServers"}
	switch c {
	case ClaudeDesktop, Cursor, Windsurf:
		return [][]string{{"mcpServers"}}
	case ClaudeCode:
		return [][]string{project, {"mcpServers"}}
	case VSCode:
		// .vscode/mcp.json, or the "mcp" section of a settings.json.
		return [][]string{{"servers"}, {"mcp", "servers"}}
	}
	return [][]string{project, {"mcpServers"}, {"servers"}, {"mcp", "servers"}}
}

// Sentinel errors, wrapped by the errors wrap returns.
var (
	ErrParse      = errors.New("unreadable configuration")
	ErrNoServer   = errors.New("no such server")
	ErrWrapped    = errors.New("already wrapped")
	ErrNotWrapped = errors.New("not wrapped")
	ErrURL        = errors.New("an HTTP server")
	ErrChanged    = errors.New("changed since it was wrapped")
)

// Config is a parsed client configuration: its bytes, untouched, and the
// syntax tree that locates its server entries.
type Config struct {
	Path   string // for messages only
	Client Client // "" when not known: every client's places are searched
	Cwd    string // the project directory claude-code's projects are keyed by
	data   []byte
	bom    int // a UTF-8 byte order mark, skipped by the parser
	root   hujson.Value
}

// Parse parses data, a client configuration (JSON with comments and
// trailing commas allowed). It refuses anything that is not an object.
func Parse(path string, c Client, cwd string, data []byte) (*Config, error) {
	cfg := &Config{Path: path, Client: c, Cwd: cwd, data: data}
	body := data
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		cfg.bom = 3
		body = body[3:]
	}
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%s: %w: expected UTF-8 text, found invalid UTF-8", path, ErrParse)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%s: %w: expected a JSON object, found an empty file", path, ErrParse)
	}
	root, err := hujson.Parse(body)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "hujson: ")
		return nil, fmt.Errorf("%s: %w: expected JSON (comments and trailing commas allowed), found a syntax error at %s", path, ErrParse, msg)
	}
	if _, ok := root.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("%s: %w: expected a JSON object at the top, found %s", path, ErrParse, kindName(root.Value.Kind()))
	}
	cfg.root = root
	return cfg, nil
}

// Bytes returns the configuration's bytes.
func (c *Config) Bytes() []byte { return c.data }

// entry is one server entry found in a configuration.
type entry struct {
	where      []string      // member names of the map holding it
	name       string        // the server's name
	value      *hujson.Value // the entry's value
	start, end int           // its bytes in Config.data
}

func (e *entry) raw(data []byte) []byte { return data[e.start:e.end] }

// member returns the value of obj's first member called name.
func member(obj *hujson.Object, name string) *hujson.Value {
	for i := range obj.Members {
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && lit.String() == name {
			return &obj.Members[i].Value
		}
	}
	return nil
}

// lookup follows the member names path from the root; nil when a member is
// missing or not an object.
func (c *Config) lookup(path []string) *hujson.Object {
	v := &c.root
	for _, name := range path {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil
		}
		if v = member(obj, name); v == nil {
			return nil
		}
	}
	obj, _ := v.Value.(*hujson.Object)
	return obj
}

// Place names a map of servers in a configuration, e.g. mcpServers or
// projects["/home/me/app"].mcpServers.
func Place(where []string) string {
	if len(where) == 3 && where[0] == "projects" {
		return fmt.Sprintf("projects[%q].%s", where[1], where[2])
	}
	return strings.Join(where, ".")
}

// Servers returns the names of the servers the configuration holds, in the
// places its client reads, in order.
func (c *Config) Servers() []string {
	var names []string
	for _, where := range c.places() {
		obj := c.lookup(where)
		if obj == nil {
			continue
		}
		for _, m := range obj.Members {
			if lit, ok := m.Name.Value.(hujson.Literal); ok && !slices.Contains(names, lit.String()) {
				names = append(names, lit.String())
			}
		}
	}
	return names
}

// Has says whether the configuration holds a server called name.
func (c *Config) Has(name string) bool { return slices.Contains(c.Servers(), name) }

// places are the server maps to search: the client's own, and, for
// claude-code, every other project's after them.
func (c *Config) places() [][]string {
	places := serverMaps(c.Client, c.Cwd)
	if c.Client != ClaudeCode && c.Client != "" {
		return places
	}
	if projects := c.lookup([]string{"projects"}); projects != nil {
		for _, m := range projects.Members {
			if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() != c.Cwd {
				places = append(places, []string{"projects", lit.String(), "mcpServers"})
			}
		}
	}
	return places
}

// find locates the server called name, or says which servers there are.
func (c *Config) find(name string) (*entry, error) {
	found := false
	for _, where := range c.places() {
		obj := c.lookup(where)
		if obj == nil {
			continue
		}
		found = true
		if v := member(obj, name); v != nil {
			return &entry{where: where, name: name, value: v, start: c.bom + v.StartOffset, end: c.bom + v.EndOffset}, nil
		}
	}
	if !found {
		var want []string
		for _, where := range serverMaps(c.Client, c.Cwd) {
			want = append(want, Place(where))
		}
		return nil, fmt.Errorf("%s: %w %q: expected servers under %s, found no such object (top-level members: %s)",
			c.Path, ErrNoServer, name, strings.Join(want, " or "), listOr(c.topLevel(), "none"))
	}
	return nil, fmt.Errorf("%s: %w %q: the servers there are %s", c.Path, ErrNoServer, name, listOr(quoteAll(c.Servers()), "none"))
}

// findAt locates the server called name in the map at where.
func (c *Config) findAt(where []string, name string) (*entry, error) {
	obj := c.lookup(where)
	if obj == nil {
		return nil, fmt.Errorf("%s: %w %q: expected servers under %s, found no such object", c.Path, ErrNoServer, name, Place(where))
	}
	v := member(obj, name)
	if v == nil {
		return nil, fmt.Errorf("%s: %w %q under %s: the servers there are %s", c.Path, ErrNoServer, name, Place(where), listOr(quoteAll(names(obj)), "none"))
	}
	return &entry{where: where, name: name, value: v, start: c.bom + v.StartOffset, end: c.bom + v.EndOffset}, nil
}

func (c *Config) topLevel() []string {
	return names(c.root.Value.(*hujson.Object))
}

func names(obj *hujson.Object) []string {
	var out []string
	for _, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok {
			out = append(out, lit.String())
		}
	}
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

func kindName(k hujson.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}
