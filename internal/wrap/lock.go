package wrap

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// LockPath is the lock file that serialises tapedeck's edits of the
// configuration at config (and of its sidecar): two wrap or unwrap runs at
// once would each read the same bytes and the second rename would lose the
// first's edit or backup.
func LockPath(config string) string { return config + ".tapedeck-wrap.lock" }

// lockWait bounds how long an edit waits for another to finish.
const lockWait = 10 * time.Second

// errLocked is what tryLock returns when another edit holds the lock.
var errLocked = errors.New("locked")

// lockConfig takes the configuration's edit lock, waiting up to lockWait
// for another tapedeck wrap or unwrap to finish; the returned function
// releases it and removes the lock file.
func lockConfig(config string) (func(), error) {
	path := LockPath(config)
	deadline := time.Now().Add(lockWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		unlock, err := tryLock(path)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%s: taking the edit lock %s: %w", config, path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: another tapedeck wrap or unwrap has been editing it for %s (it holds %s); nothing was changed: try again when it is done", config, lockWait, path)
		}
		time.Sleep(delay)
	}
}

// sameFile reports whether path still names the open file f: the lock's
// owner removes the lock file while holding it, so a waiter that opened it
// before then holds a file no longer linked and must try again.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
