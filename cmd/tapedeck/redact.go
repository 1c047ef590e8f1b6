package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/tape"
)

func newRedactCmd(s streams) *cobra.Command {
	var rf redactFlags
	var output string
	var force bool
	cmd := &cobra.Command{
		Use:   "redact IN -o OUT",
		Short: "Write a copy of a tape with secrets blanked",
		Long: `redact reads a tape line by line and writes a copy with the redaction rules
applied, as "tapedeck record" applies them while recording. Lines that no
rule matches are copied byte for byte; a redacted line is re-serialized (keys
sorted) and lists what was redacted in _meta.redacted. _meta's dir, server
and ts are never redacted. Invalid lines are kept, with only --redact-value
applied to their text.

IN or OUT may be "-" for stdin or stdout. OUT is created 0600 and must not
exist yet unless --force.

` + redactHelp,
		Example: `  tapedeck redact session.jsonl -o fixture.jsonl --redact-key apiKey --redact-key password
  tapedeck redact session.jsonl -o - --redact-value 'sk-[A-Za-z0-9]{20,}' --redact-path params.arguments.token`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			red, err := rf.redactor()
			if err != nil {
				return err
			}
			if red.Empty() {
				return errors.New("redact: no rules: give --redact-key, --redact-path or --redact-value")
			}
			if output == "" {
				return errors.New("redact: expected -o OUT (use -o - for stdout)")
			}
			in := s.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("redact: %w", err)
				}
				defer f.Close()
				in = f
			}
			out := s.stdout
			var of *os.File
			if output != "-" {
				if force {
					_ = os.Remove(output)
				}
				of, _, err = tape.Create(output, false)
				if errors.Is(err, os.ErrExist) {
					return fmt.Errorf("redact: %s already exists; use --force to replace it", output)
				}
				if err != nil {
					return fmt.Errorf("redact: %w", err)
				}
				defer of.Close()
				out = of
			}
			n, err := redactTape(in, out, red, s.stderr)
			if err != nil {
				return err
			}
			if of != nil {
				if err := of.Close(); err != nil {
					return fmt.Errorf("redact: %w", err)
				}
			}
			fmt.Fprintf(s.stderr, "redact: %d lines redacted\n", n)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the redacted tape to `OUT` (- for stdout)")
	cmd.Flags().BoolVar(&force, "force", false, "replace OUT if it exists")
	rf.add(cmd)
	return cmd
}

// redactTape streams a tape through the redactor with tape.Reader, one line
// at a time: the messages of a batch line are redacted one by one and put
// back in their array. It returns how many lines changed. A torn last line
// is kept torn (without a newline), so readers still see it as torn.
func redactTape(in io.Reader, out io.Writer, red *tape.Redactor, stderr io.Writer) (int, error) {
	r := tape.NewReader(in)
	w := bufio.NewWriterSize(out, 256<<10)
	changed, lines := 0, 0
	var batch [][]byte // messages of the array line being read
	var batchRaw []byte
	batchLine, batchChanged := 0, false
	// Each line's newline is written when the next line comes, or at the
	// end unless the last line was torn.
	writeLine := func(b []byte) {
		if lines > 0 {
			w.WriteByte('\n')
		}
		lines++
		w.Write(b)
	}
	flushBatch := func() {
		if batch == nil {
			return
		}
		if batchChanged {
			changed++
			writeLine(append(append([]byte("["), bytes.Join(batch, []byte(","))...), ']'))
		} else {
			writeLine(batchRaw) // nothing matched: the array as it was read
		}
		batch, batchChanged = nil, false
	}
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return changed, fmt.Errorf("redact: %w", err)
		}
		if e.Line != batchLine {
			flushBatch()
		}
		if e.Kind == tape.KindInvalid {
			// Not a message (an invalid batch too): the whole line is kept,
			// with only the value rules applied to its text.
			msg := red.RedactText(bytes.Clone(r.Line()))
			if !bytes.Equal(msg, r.Line()) {
				changed++
			}
			writeLine(msg)
			continue
		}
		// Lifecycle records are redacted too, since stderr lines carry
		// secrets.
		msg, ch, err := red.RedactLine(e.Raw)
		if err != nil {
			// What came before is redacted: write it, so that the message
			// tells the truth about what the output holds.
			if batch != nil && batchLine == e.Line {
				batch = nil
			}
			flushBatch()
			if lines > 0 {
				w.WriteByte('\n')
			}
			if ferr := w.Flush(); ferr != nil {
				return changed, fmt.Errorf("redact: line %d: %w; and writing the lines before it failed: %v", e.Line, err, ferr)
			}
			return changed, fmt.Errorf("redact: line %d: %w; nothing written past line %d", e.Line, err, e.Line-1)
		}
		if e.Batch != 0 { // from a JSON array line
			batch, batchLine, batchRaw = append(batch, msg), e.Line, r.Line()
			batchChanged = batchChanged || ch
			continue
		}
		if ch {
			changed++
		}
		writeLine(msg)
	}
	flushBatch()
	for _, wr := range r.Warnings() {
		fmt.Fprintf(stderr, "warning: %v\n", wr)
	}
	if n := r.WarningCount() - len(r.Warnings()); n > 0 {
		fmt.Fprintf(stderr, "warning: %d more warnings not shown\n", n)
	}
	if lines > 0 && !r.Torn() {
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return changed, fmt.Errorf("redact: write: %w", err)
	}
	return changed, nil
}
