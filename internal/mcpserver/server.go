// Package mcpserver is tapedeck as an MCP server for agents (tapedeck mcp):
// tools over the library of tapes (internal/library) to list and search
// tapes, read a call, count a tape (stats), check it, diff two tapes,
// explain a replay's divergence report and give the command that opens a
// tape at a message, and a resource template, tape://PATH, whose resources
// are a tape's summary and stats.
//
// It is read-only: no tool writes a tape, a report or the library's list of
// directories (its index, a cache, is refreshed as ls does). Nothing outside
// the library is read: every path a tool is given must be a tape file the
// library covers or a file directly in one of its directories (ls and
// search read no subdirectories either), symbolic links resolved; any other
// is refused with an error that names the library's directories.
//
// Every tool's result carries structuredContent, and every tool an
// outputSchema, both derived by the go-sdk from the Go types below; the text
// content is the same JSON, for clients that read only text.
//
// Non-goals: replaying or recording (an agent runs tapedeck replay and
// record as commands), and the TUI (open_at gives the command line).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/library"
)

// Options configure New.
type Options struct {
	// Library is the library of tapes served; the caller opens and closes
	// it.
	Library *library.Library
	// Version is tapedeck's version, given as the server's.
	Version string
}

// ErrOutside is the error of a path outside the library.
var ErrOutside = errors.New("outside the library")

// service holds what the tools share.
type service struct {
	lib *library.Library
}

// New returns the MCP server with tapedeck's tools and resources.
func New(o Options) *mcp.Server {
	version := o.Version
	if version == "" {
		version = "dev"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tapedeck", Title: "tapedeck: recorded MCP sessions", Version: version}, &mcp.ServerOptions{
		Instructions: "tapedeck's library of recorded MCP sessions (tapes, NDJSON). list_tapes and search_tapes find tapes and messages (each hit is TAPE:SEQ); get_call reads one call; tape_stats, check_tape and diff_tapes analyse tapes; explain_report explains a tapedeck replay --report file; open_at gives the command that opens a tape at a message in the debugger. Paths must be in the library's directories.",
	})
	s := &service{lib: o.Library}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}
	add := func(name, title, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ro}
	}
	mcp.AddTool(srv, add("list_tapes", "List tapes",
		"Lists the tapes of the library, newest first: when each started, its servers, client, how many calls and failures it holds, and its path (what the other tools take)."), s.listTapes)
	mcp.AddTool(srv, add("search_tapes", "Search tapes",
		"Finds messages across every tape of the library by the words in their params, result or error, newest first. Each hit names its tape and seq (get_call and open_at take them). Filters: tool, method, status (ok, error, rpc-error, tool-error, negotiation, pending, cancelled, late, orphan), since (an age such as 24h or 7d, or a date)."), s.searchTapes)
	mcp.AddTool(srv, add("get_call", "Get a call",
		"Reads one call of a tape: its request and answer as they crossed the wire, the notifications and server requests of its server recorded while it was open, its status and latency. seq is the request's or the answer's (as search_tapes gives it)."), s.getCall)
	mcp.AddTool(srv, add("tape_stats", "Tape stats",
		"Counts a tape's messages per server and method: requests, notifications, answers, errors (JSON-RPC errors and tool results with isError), pending, cancelled, latency percentiles, and what each server's definitions cost a model's context (as tapedeck stats --json)."), s.tapeStats)
	mcp.AddTool(srv, add("check_tape", "Check a tape",
		"Runs tapedeck check on a tape: findings (failed calls, slow calls, expected or forbidden tools, with spec the MCP specification of the negotiated version), each with its rule, line and seq, and whether the check failed (a finding whose rule is in fail_on)."), s.checkTape)
	mcp.AddTool(srv, add("diff_tapes", "Diff two tapes",
		"Compares two tapes as tapedeck diff does: calls on one side only, answers that changed (status, error, result as JSON-pointer differences), latencies that moved, tool/prompt/resource definitions added, removed or changed, protocol and capabilities."), s.diffTapes)
	mcp.AddTool(srv, add("explain_report", "Explain a replay report",
		"Explains a tapedeck replay --report JSON file: the verdict, each divergence (what the client sent, what the tape expected, the differences, what the reason means and what to try), and the recorded requests the client never sent."), s.explainReport)
	mcp.AddTool(srv, add("open_at", "Open a tape at a message",
		"Gives the command line that opens a tape in tapedeck's debugger (a terminal UI) with the cursor on message seq: tapedeck open TAPE:SEQ. It runs nothing; a person runs the command in a terminal."), s.openAt)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "tape",
		Title:       "A tape's summary and stats",
		URITemplate: "tape://{+path}",
		Description: "A tape of the library by its absolute path (tape:///home/me/.local/state/tapedeck/tapes/x.jsonl): its one-line summary and its stats as JSON.",
		MIMEType:    "application/json",
	}, s.readTape)
	return srv
}

// resolve gives the real path of p if it is a tape file of the library or a
// file directly in one of its directories; a relative p is looked up in
// each directory in turn. Whether a file outside the library exists is
// never said.
func (s *service) resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("expected a path in the library (list_tapes gives them), found an empty one")
	}
	roots, err := s.lib.Roots()
	if err != nil {
		return "", err
	}
	var dirs, files []string
	for _, r := range roots {
		real := r
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			real = rr
		}
		if st, err := os.Stat(real); err == nil && !st.IsDir() {
			files = append(files, real)
		} else {
			dirs = append(dirs, real)
		}
	}
	var candidates []string
	if filepath.IsAbs(p) {
		candidates = []string{filepath.Clean(p)}
	} else {
		for _, d := range dirs {
			candidates = append(candidates, filepath.Join(d, p))
		}
	}
	inside := func(path string) bool {
		for _, f := range files {
			if path == f {
				return true
			}
		}
		for _, d := range dirs {
			if filepath.Dir(path) == d {
				return true
			}
		}
		return false
	}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			if inside(c) && errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("%s: no such file in the library", p)
			}
			continue
		}
		if !inside(real) {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s: expected a file, found none or a directory", p)
		}
		return real, nil
	}
	return "", fmt.Errorf("%s: %w, which reads only the tapes it lists and the files directly in its directories (%s); tapedeck ls DIR adds a directory", p, ErrOutside, strings.Join(roots, ", "))
}

// asJSON decodes raw JSON into a value for structured output; invalid JSON
// (a torn record) is kept as a string.
func asJSON(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}

// TapeURI is the resource URI of the tape at path (an absolute path).
func TapeURI(path string) string { return "tape://" + filepath.ToSlash(path) }

// ctxErr returns the context's error, if any: a tool stops when its call
// is cancelled.
func ctxErr(ctx context.Context) error { return ctx.Err() }
