package library

import (
	"fmt"
	"path/filepath"
)

// Forget takes directories and tape files added with Add out of the
// library (the files stay on disk); the next Refresh forgets their tapes.
// It returns the paths it took out: a path that was never added, and the
// default directory, are not.
func (l *Library) Forget(paths ...string) ([]string, error) {
	var forgot []string
	err := l.withRebuild(func() error {
		forgot = forgot[:0]
		tx, err := l.db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, p := range paths {
			a, err := filepath.Abs(p)
			if err != nil {
				return err
			}
			a = filepath.Clean(a)
			if a == l.opts.DefaultDir {
				return fmt.Errorf("forget %s: it is where tapedeck record writes, always in the library", p)
			}
			res, err := tx.Exec("DELETE FROM roots WHERE path = ?", a)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				forgot = append(forgot, a)
			}
		}
		return tx.Commit()
	})
	return forgot, err
}
