// Package backup copies a SQLite herald, running or not, with the secret key
// that opens it, and brings such a copy back in place of a database: the
// files of `herald backup` and `herald restore`. A copy is one consistent
// snapshot (store.CopySQLite), checked whole and against its key before it
// is kept, and never replaces a file. PostgreSQL is backed up with its own
// tools (docs/operations.md).
package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
)

// Key is the secret key that opens a database, and where it came from.
type Key struct {
	Value []byte
	// File is the key file it was read from; "" when it was given as a
	// value (--secret-key, $HERALD_SECRET_KEY), which is then written
	// nowhere: whoever gave it keeps it.
	File string
}

// ExistsError is a file that a backup or a restore would have replaced.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string { return e.Path + " already exists" }

// Made is a backup that was made.
type Made struct {
	Path string
	// KeyFile holds the copy's key (FILE.key, mode 0600), or is "" when
	// the key was given as a value and not written.
	KeyFile string
	Size    int64
	// At is when the copy began: it holds what was committed before.
	At time.Time
}

// KeyFileFor is where a backup at path keeps its key.
func KeyFileFor(path string) string { return path + ".key" }

// Backup copies the SQLite database at dbPath to the new file to, and its
// key to to.key when key came from a file. Neither may exist. The copy is
// made beside to under a temporary name, checked (integrity_check, and
// that key opens it), synced, and only then given its name, so a failed
// backup leaves nothing that looks like one.
func Backup(ctx context.Context, dbPath, to string, key Key) (Made, error) {
	m := Made{Path: to}
	if key.File != "" {
		m.KeyFile = KeyFileFor(to)
	}
	for _, p := range []string{to, m.KeyFile} {
		if err := absent(p); err != nil {
			return Made{}, err
		}
	}
	tmp, err := tempBeside(to)
	if err != nil {
		return Made{}, err
	}
	defer os.Remove(tmp) // once renamed, nothing is left under this name
	m.At = time.Now().UTC()
	if err := store.CopySQLite(ctx, dbPath, tmp); err != nil {
		return Made{}, err
	}
	if err := store.CheckSQLiteCopy(ctx, tmp, key.Value); err != nil {
		return Made{}, fmt.Errorf("the copy failed its check: %w", err)
	}
	if m.Size, err = syncFile(tmp); err != nil {
		return Made{}, err
	}
	if m.KeyFile != "" {
		if err := secret.WriteKeyFile(m.KeyFile, key.Value); errors.Is(err, fs.ErrExist) {
			return Made{}, &ExistsError{m.KeyFile}
		} else if err != nil {
			return Made{}, err
		}
	}
	err = absent(to)
	if err == nil {
		err = os.Rename(tmp, to)
	}
	if err != nil {
		if m.KeyFile != "" {
			os.Remove(m.KeyFile)
		}
		return Made{}, err
	}
	return m, syncDir(to)
}

// absent returns an *ExistsError when path ("" is none) exists.
func absent(path string) error {
	if path == "" {
		return nil
	}
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return &ExistsError{path}
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return err
}

// tempBeside creates an empty file of mode 0600 in path's directory, for
// what becomes path once complete (a rename within one filesystem).
func tempBeside(path string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncFile makes path private (it holds the account's data) and flushes it
// to disk, and returns its size.
func syncFile(path string) (int64, error) {
	if err := os.Chmod(path, 0o600); err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("sync %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// syncDir flushes the directory holding path, so that a rename into it
// survives a crash.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// RestoreOptions are what Restore needs.
type RestoreOptions struct {
	From string // a copy made by Backup
	Key  Key    // opens it
	// Database is the SQLite file to restore into; KeyFile where herald
	// will read its key ("": the key is given as a value, and not written).
	Database, KeyFile string
	// Force replaces an existing database (and a key file holding another
	// key). Without it neither is replaced.
	Force bool
}

// Restore copies a backup into place while no herald runs on the database:
// it takes the lock a running herald holds, so it refuses while one does,
// and no herald starts while it works. The copy is checked first; the
// database's old -wal and -shm files are removed, since SQLite would
// otherwise replay the old database's last writes into the restored one;
// the new files are written beside their names and renamed into place.
func Restore(ctx context.Context, r RestoreOptions) error {
	if err := store.CheckSQLiteCopy(ctx, r.From, r.Key.Value); err != nil {
		return err
	}
	release, err := store.LockSQLite(r.Database)
	if err != nil {
		return err
	}
	defer release()
	if !r.Force {
		if err := absent(r.Database); err != nil {
			return err
		}
	}
	writeKey, err := r.keyToWrite()
	if err != nil {
		return err
	}
	tmp, err := tempBeside(r.Database)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := copyFile(r.From, tmp); err != nil {
		return err
	}
	var keyTmp string
	if writeKey {
		if keyTmp, err = tempBeside(r.KeyFile); err != nil {
			return err
		}
		defer os.Remove(keyTmp)
		os.Remove(keyTmp) // WriteKeyFile makes it anew, refusing to replace a file
		if err := secret.WriteKeyFile(keyTmp, r.Key.Value); err != nil {
			return err
		}
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(r.Database + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(tmp, r.Database); err != nil {
		return err
	}
	if writeKey {
		if err := os.Rename(keyTmp, r.KeyFile); err != nil {
			return err
		}
	}
	return syncDir(r.Database)
}

// keyToWrite says whether the key file must be written: it is to be kept
// in one and that file does not hold it. A file holding another key is
// replaced only with Force.
func (r RestoreOptions) keyToWrite() (bool, error) {
	if r.KeyFile == "" {
		return false, nil
	}
	k, err := secret.ReadKeyFile(r.KeyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err == nil && bytes.Equal(k, r.Key.Value):
		return false, nil
	case r.Force:
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%w (it holds another key, that of the database being replaced)", &ExistsError{r.KeyFile})
	}
	return false, err
}

// copyFile copies from into the existing file to and syncs it.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}
