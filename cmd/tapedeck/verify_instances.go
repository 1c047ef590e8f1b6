package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/upstream"
)

// verifyInstances runs verify --instances: the tape against each
// Streamable HTTP endpoint of urls at once (upstream.VerifyInstances).
func verifyInstances(ctx context.Context, s streams, x *tape.Index, server string, urls []string, client *http.Client, opts upstream.VerifyOptions) error {
	var ins []upstream.Instance
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			if err := c.Close(); err != nil {
				fmt.Fprintf(s.stderr, "tapedeck verify: %v\n", err)
			}
		}
	}()
	for _, u := range urls {
		conn, err := dialURL(ctx, x, server, u, client)
		if err != nil {
			return fmt.Errorf("--instances %s: %w", u, err)
		}
		closers = append(closers, conn)
		ins = append(ins, upstream.Instance{Name: u, Conn: conn})
	}
	rep, err := upstream.VerifyInstances(ctx, x, ins, opts)
	if err != nil {
		return err
	}
	writeInstances(s.stdout, rep)
	if err := rep.Err(); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// parseInstances splits --instances' comma-separated URLs.
func parseInstances(list string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("--instances %q: expected two or more URLs, comma-separated", list)
	}
	return out, nil
}

// writeInstances prints each instance's verdict against the tape, then
// each call that split the instances: who answered alike, and how the
// others differ from the largest group.
func writeInstances(w io.Writer, rep upstream.InstancesReport) {
	for k, name := range rep.Instances {
		r := rep.Reports[k]
		var differ []string
		for _, c := range r.Calls {
			if !c.Pass {
				differ = append(differ, fmt.Sprintf("%s (line %d)", callName(c.Method, c.Name), c.Line))
			}
		}
		switch {
		case rep.Errs[k] != nil:
			fmt.Fprintf(w, "FAIL instance %d %s: stopped after %d calls: %s\n", k+1, name, len(r.Calls), text.Safe(rep.Errs[k].Error()))
		case len(differ) > 0:
			fmt.Fprintf(w, "FAIL instance %d %s: %d of %d calls answered differently from the tape: %s\n", k+1, name, len(differ), len(r.Calls), text.Safe(strings.Join(differ, ", ")))
		default:
			fmt.Fprintf(w, "PASS instance %d %s: %d calls answered as the tape does\n", k+1, name, len(r.Calls))
		}
	}
	for _, sp := range rep.Splits {
		fmt.Fprintf(w, "SPLIT %s (line %d): %s\n", text.Safe(callName(sp.Method, sp.Name)), sp.Line, groupNames(rep, sp.Groups[0]))
		for g, diff := range sp.Diffs {
			fmt.Fprintf(w, "    %s differ%s:\n", groupNames(rep, sp.Groups[g+1]), map[bool]string{true: "s", false: ""}[len(sp.Groups[g+1]) == 1])
			for _, d := range diff {
				fmt.Fprintf(w, "      %s\n", text.Safe(d.String()))
			}
		}
	}
	fmt.Fprintf(w, "%s, %s splitting them\n", text.Plural(len(rep.Instances), "instance"), text.Plural(len(rep.Splits), "call"))
}

func callName(method, name string) string {
	if name != "" {
		return method + " " + name
	}
	return method
}

// groupNames names instances by number and URL.
func groupNames(rep upstream.InstancesReport, group []int) string {
	var out []string
	for _, k := range group {
		out = append(out, fmt.Sprintf("instance %d %s", k+1, rep.Instances[k]))
	}
	return strings.Join(out, ", ")
}
