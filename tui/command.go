package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrCommand reports a command line the app does not understand.
var ErrCommand = errors.New("bad command")

// command is one parsed ":" command line.
type command struct {
	name  string        // goto, break, delete, speed, filter, quit, follow
	seq   int           // goto N
	at    time.Duration // goto 12.5s
	atSet bool
	arg   string  // break SPEC, filter QUERY
	speed float64 // speed X (0 = instant)
	force bool    // write! replaces an existing file
}

// parseCommand parses the text typed after ":".
func parseCommand(line string) (command, error) {
	line = strings.TrimSpace(line)
	name, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch name {
	case "q", "quit", "q!", "wq":
		return command{name: "quit"}, nil
	case "goto", "g":
		if rest == "" {
			return command{}, fmt.Errorf("%w: goto needs a message number (goto 120) or a time (goto 12.5s)", ErrCommand)
		}
		if n, err := strconv.Atoi(rest); err == nil {
			if n < 0 {
				return command{}, fmt.Errorf("%w: goto %d: message numbers start at 0", ErrCommand, n)
			}
			return command{name: "goto", seq: n}, nil
		}
		d, err := time.ParseDuration(rest)
		if err != nil {
			return command{}, fmt.Errorf("%w: goto %q: expected a message number like 120 or a time like 12.5s", ErrCommand, rest)
		}
		return command{name: "goto", at: d, atSet: true}, nil
	case "break", "b":
		if rest == "" {
			return command{}, fmt.Errorf("%w: break needs a method (break tools/call), tool=NAME, error, or when EXPR", ErrCommand)
		}
		return command{name: "break", arg: rest}, nil
	case "delete", "d":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return command{}, fmt.Errorf("%w: delete %q: expected a breakpoint number (see B)", ErrCommand, rest)
		}
		return command{name: "delete", seq: n}, nil
	case "speed":
		if rest == "instant" || rest == "max" {
			return command{name: "speed", speed: 0}, nil
		}
		x, err := strconv.ParseFloat(strings.TrimSuffix(rest, "x"), 64)
		if err != nil || x < 0 {
			return command{}, fmt.Errorf("%w: speed %q: expected a factor like 0.25, 4 or 64, or instant", ErrCommand, rest)
		}
		return command{name: "speed", speed: x}, nil
	case "filter":
		return command{name: "filter", arg: rest}, nil
	case "messages", "mes", "messages!":
		return command{name: "messages"}, nil
	case "write", "w", "write!", "w!":
		if rest == "" {
			return command{}, fmt.Errorf("%w: write needs a file name (write call.json); write! FILE replaces a file", ErrCommand)
		}
		return command{name: "write", arg: rest, force: strings.HasSuffix(name, "!")}, nil
	case "":
		return command{}, fmt.Errorf("%w: empty command; try goto, break, speed, filter or q", ErrCommand)
	}
	return command{}, fmt.Errorf("%w: %q; expected goto, break, delete, speed, filter, write, messages or q", ErrCommand, name)
}
