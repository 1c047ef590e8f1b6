package record

import (
	"fmt"
	"os"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// ProbeWindow is how recently a tape must have been written for a new
// recorder run of the same server to append to it without being asked
// (see AfterProbe).
const ProbeWindow = 30 * time.Second

// AfterProbe reports whether a new stdio recorder run of server may append
// to the existing tape at path as a new episode without --append: the
// tape's last episode of server (tape.Episodes) is a server/discover probe
// and nothing else, and the tape was written within ProbeWindow of now.
// That is what a client leaves that starts the server once for its probe,
// kills it, and starts it again for the session (the 2026-07-28 TypeScript
// SDK over stdio). Appending never rewrites what the tape holds; any other
// existing tape is refused, as before. why says what was found.
func AfterProbe(path, server string, now time.Time) (ok bool, why string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, "", err
	}
	age := now.Sub(st.ModTime())
	if age > ProbeWindow || age < -ProbeWindow {
		return false, fmt.Sprintf("last written %s ago, more than %s", age.Round(time.Second), ProbeWindow), nil
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return false, "", err
	}
	defer x.Close()
	eps := tape.Episodes(x, server)
	last := eps[len(eps)-1]
	if !last.ProbeOnly {
		return false, fmt.Sprintf("its last episode of server %q is not a %s probe", server, tape.MethodDiscover), nil
	}
	return true, fmt.Sprintf("its last episode of server %q, written %s ago, is a %s probe", server, age.Round(time.Millisecond), tape.MethodDiscover), nil
}
