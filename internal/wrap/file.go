package wrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapedeck/tapedeck/internal/outfile"
)

// Backup is one wrapped entry's original bytes, and the bytes wrap put in
// their place.
type Backup struct {
	Server   string   `json:"server"`
	Client   Client   `json:"client,omitempty"`
	Where    []string `json:"where"`    // the member names of the map holding the entry
	Original string   `json:"original"` // the entry's value before wrap, byte for byte
	Wrapped  string   `json:"wrapped"`  // the entry's value wrap wrote
}

// Backups is the sidecar file next to a configuration (see [SidecarPath]):
// the backups of its wrapped entries, by server name.
type Backups struct {
	Note    string            `json:"note"`
	Config  string            `json:"config"`
	Servers map[string]Backup `json:"servers"`
}

const backupsNote = "tapedeck wrap's backups of the server entries it rewrote in config; tapedeck unwrap SERVER puts each back and removes it here"

// SidecarPath is where the backups of config's wrapped entries are kept.
func SidecarPath(config string) string { return config + ".tapedeck-wrap.json" }

// ParseBackups reads a sidecar file.
func ParseBackups(path string, data []byte) (*Backups, error) {
	var b Backups
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w: expected tapedeck wrap's backups (JSON), found %v", path, ErrParse, err)
	}
	if b.Servers == nil {
		return nil, fmt.Errorf("%s: %w: expected tapedeck wrap's backups with a \"servers\" object, found none", path, ErrParse)
	}
	for name, s := range b.Servers {
		if s.Server != name || len(s.Where) == 0 {
			return nil, fmt.Errorf("%s: %w: the backup of %q is incomplete (expected its server name and \"where\")", path, ErrParse, name)
		}
	}
	return &b, nil
}

// Encode returns the sidecar's bytes.
func (b *Backups) Encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(b) // strings and maps of strings: cannot fail
	return buf.Bytes()
}

// Result says what WrapFile or UnwrapFile did.
type Result struct {
	Config  string // the configuration written
	Sidecar string // the backups file
	Client  Client
	Server  string
	Where   []string
	Command []string // wrap: what the entry now runs
	Notes   []string // things worth saying that did not stop the work
}

// WrapFile wraps the server name in the configuration at path (see
// [Config.Wrap]) and keeps the entry's original bytes in the sidecar
// ([SidecarPath]). The sidecar is written first; the configuration is
// replaced in one rename, and only if it did not change since it was read.
// Edits of one configuration are serialised by a lock file beside it
// ([LockPath]): a second wrap or unwrap waits for the first.
func WrapFile(path string, c Client, cwd, name, exe string) (*Result, error) {
	unlock, err := lockConfig(path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	data, cfg, side, backups, oldSide, err := loadConfig(path, c, cwd)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: path, Sidecar: side, Client: c, Server: name}
	if b, ok := backups.Servers[name]; ok {
		if cur := cfg.entryAt(b.Where, name); cur != nil && string(cur) == b.Wrapped {
			return nil, fmt.Errorf("%s: server %q is %w (its original is kept in %s); \"tapedeck unwrap %s\" puts it back", path, name, ErrWrapped, side, name)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s held an older backup of %q that no longer matches the configuration; it is replaced", side, name))
	}
	edit, err := cfg.Wrap(name, exe)
	if err != nil {
		return nil, err
	}
	res.Where, res.Command = edit.Where, edit.Command
	backups.Servers[name] = Backup{Server: name, Client: c, Where: edit.Where, Original: string(edit.Original), Wrapped: string(edit.Wrapped)}
	if err := WriteFileAtomic(side, backups.Encode(), 0o600); err != nil {
		return nil, fmt.Errorf("wrap: keeping the backup: %w", err)
	}
	if err := replaceConfig(path, data, edit.Data); err != nil {
		// The configuration is as it was: so is the sidecar.
		if oldSide == nil {
			os.Remove(side)
		} else {
			_ = WriteFileAtomic(side, oldSide, 0o600)
		}
		return nil, err
	}
	return res, nil
}

// UnwrapFile puts back the server name in the configuration at path from
// its backup in the sidecar, then removes the backup (and the sidecar when
// it was the last). An entry changed since wrap is refused unless force.
func UnwrapFile(path string, c Client, cwd, name string, force bool) (*Result, error) {
	unlock, err := lockConfig(path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	data, cfg, side, backups, _, err := loadConfig(path, c, cwd)
	if err != nil {
		return nil, err
	}
	b, ok := backups.Servers[name]
	if !ok {
		wrapped, err := cfg.IsWrapped(name)
		if err != nil {
			return nil, err
		}
		if wrapped {
			return nil, fmt.Errorf("%s: server %q runs through tapedeck record, but %s holds no backup of it: expected the backup tapedeck wrap keeps, found none; edit the entry by hand (its original command follows \"--\" in its args)", path, name, side)
		}
		return nil, fmt.Errorf("%s: server %q is %w: expected an entry that runs tapedeck record, found one that does not, and no backup of it in %s", path, name, ErrNotWrapped, side)
	}
	out, err := cfg.Unwrap(b, force)
	if err != nil {
		return nil, err
	}
	if err := replaceConfig(path, data, out); err != nil {
		return nil, err
	}
	res := &Result{Config: path, Sidecar: side, Client: c, Server: name, Where: b.Where}
	delete(backups.Servers, name)
	if len(backups.Servers) == 0 {
		err = os.Remove(side)
	} else {
		err = WriteFileAtomic(side, backups.Encode(), 0o600)
	}
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the entry is back, but its backup could not be removed from %s: %v", side, err))
	}
	return res, nil
}

// Find returns the first candidate whose configuration holds a server
// called name, or an error that says what was tried and what each held.
func Find(cands []Candidate, cwd, name string) (Candidate, error) {
	var tried []string
	for _, cand := range cands {
		data, err := os.ReadFile(cand.Path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				tried = append(tried, fmt.Sprintf("%s %s: no such file", cand.Client, cand.Path))
			} else {
				tried = append(tried, fmt.Sprintf("%s %s: %v", cand.Client, cand.Path, err))
			}
			continue
		}
		cfg, err := Parse(cand.Path, cand.Client, cwd, data)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s %s", cand.Client, strings.TrimPrefix(err.Error(), cand.Path+": ")))
			continue
		}
		if cfg.Has(name) {
			return cand, nil
		}
		tried = append(tried, fmt.Sprintf("%s %s: servers %s", cand.Client, cand.Path, listOr(quoteAll(cfg.Servers()), "none")))
	}
	return Candidate{}, fmt.Errorf("%w %q in any client's configuration; tried:\n  %s\n--client or --config says where to look", ErrNoServer, name, strings.Join(tried, "\n  "))
}

// loadConfig reads and parses the configuration at path, and reads its
// sidecar: the configuration's bytes, the parsed configuration, the
// sidecar's path, its backups and its bytes (nil when there is none).
func loadConfig(path string, c Client, cwd string) (data []byte, cfg *Config, side string, backups *Backups, oldSide []byte, err error) {
	if data, err = readConfig(path, c); err != nil {
		return nil, nil, "", nil, nil, err
	}
	if cfg, err = Parse(path, c, cwd, data); err != nil {
		return nil, nil, "", nil, nil, err
	}
	side = SidecarPath(path)
	if backups, oldSide, err = readBackups(side, path); err != nil {
		return nil, nil, "", nil, nil, err
	}
	return data, cfg, side, backups, oldSide, nil
}

func readConfig(path string, c Client) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		who := "an MCP client's"
		if c != "" {
			who = string(c) + "'s"
		}
		return nil, fmt.Errorf("%s: no such file: expected %s MCP configuration there (--config PATH names another)", path, who)
	}
	return data, err
}

// readBackups reads the sidecar, an empty set when there is none; it also
// returns the sidecar's bytes (nil when there was none).
func readBackups(side, config string) (*Backups, []byte, error) {
	data, err := os.ReadFile(side)
	if errors.Is(err, fs.ErrNotExist) {
		abs, aerr := filepath.Abs(config)
		if aerr != nil {
			abs = config
		}
		return &Backups{Note: backupsNote, Config: abs, Servers: map[string]Backup{}}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := ParseBackups(side, data)
	return b, data, err
}

// replaceConfig writes data to path, unless the file no longer holds was
// (the client rewrote it meanwhile).
func replaceConfig(path string, was, data []byte) error {
	now, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, was) {
		return fmt.Errorf("%s changed while tapedeck was editing it (the client rewrote it?); nothing was changed: try again", path)
	}
	return WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic replaces the file at path with data: written to a
// temporary file in the same directory, synced, then renamed over it, so a
// reader sees the old file or the new one, never a part. A symbolic link
// stays a link: its target is replaced. An existing file keeps its
// permissions; a new one gets perm.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: expected a regular file, found %s", path, fi.Mode().Type())
	}
	f, err := outfile.Create(path, outfile.Options{Perm: perm, Sync: true})
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}
