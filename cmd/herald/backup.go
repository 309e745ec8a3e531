package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldhq/herald/internal/backup"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
)

// backupCmd is `herald backup --to FILE`: a consistent copy of a SQLite
// herald, running or not, with its key beside it.
func backupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &envFlags{fs: flag.NewFlagSet("herald backup", flag.ContinueOnError),
		summary: "Copy a SQLite herald's database, running or not, to a new file, checked with integrity_check,\nwith its secret key beside it (FILE.key). On PostgreSQL use pg_dump."}
	e.fs.SetOutput(stderr)
	sf := addStoreFlags(e)
	to := e.fs.String("to", "", "the new `file` to write the copy to (required; its key goes to FILE.key); never replaced")
	if err := parse(e, args); err != nil {
		return err
	}
	if *to == "" {
		return usageError{"herald backup", errors.New("--to is required: the new file to write the copy to")}
	}
	// The copy is written beside --to first: a missing folder would be
	// named by that file's name, which the user never gave.
	if dir := filepath.Dir(*to); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("--to %s: the folder %s does not exist; create it first, or choose another place", *to, dir)
		}
	}
	path, err := sqlitePath(*sf.database, "backup", "pg_dump")
	if err != nil {
		return err
	}
	key, err := sf.existingKey()
	if err != nil {
		return err
	}
	m, err := backup.Backup(ctx, path, *to, key)
	if ex, ok := errors.AsType[*backup.ExistsError](err); ok {
		return fmt.Errorf("--to %s: %s already exists; a backup never replaces a file: choose a new name", *to, ex.Path)
	}
	if err != nil {
		return fmt.Errorf("backup of %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "herald: copied %s to %s (%s, integrity_check ok) as of %s\n", path, m.Path, size(m.Size), m.At.Format("2006-01-02T15:04:05Z"))
	if m.KeyFile != "" {
		fmt.Fprintf(stdout, "herald: its secret key is in %s (mode 0600); the copy is useless without it: keep the two together, and as secret as the key\n", m.KeyFile)
	} else {
		fmt.Fprintln(stdout, "herald: the secret key was given by --secret-key or $HERALD_SECRET_KEY, so no key file was written: the copy is useless without that key; keep it with the copy, and give it to herald restore the same way")
	}
	return nil
}

// restoreCmd is `herald restore --from FILE`: a copy made by herald backup
// put in place of the database, with herald stopped.
func restoreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &envFlags{fs: flag.NewFlagSet("herald restore", flag.ContinueOnError),
		summary: "Put a copy made by herald backup in place of the SQLite database, herald stopped."}
	e.fs.SetOutput(stderr)
	sf := addStoreFlags(e)
	from := e.fs.String("from", "", "the `file` herald backup wrote (required); its key is read from FILE.key unless --secret-key gives it")
	force := e.fs.Bool("force", false, "replace the database (and a key file holding another key) if it exists; herald must be stopped all the same")
	if err := parse(e, args); err != nil {
		return err
	}
	if *from == "" {
		return usageError{"herald restore", errors.New("--from is required: the file herald backup wrote")}
	}
	path, err := sqlitePath(*sf.database, "restore", "pg_restore")
	if err != nil {
		return err
	}
	o := backup.RestoreOptions{From: *from, Database: path, Force: *force}
	if *sf.secretKey != "" {
		if o.Key.Value, err = secret.ParseKey(*sf.secretKey); err != nil {
			return err
		}
	} else {
		keyFile := backup.KeyFileFor(*from)
		if o.Key.Value, err = secret.ReadKeyFile(keyFile); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--from %s: its key file %s is not there; put it beside the copy, or give the key with --secret-key", *from, keyFile)
		} else if err != nil {
			return err
		}
		o.Key.File, o.KeyFile = keyFile, sf.keyPath()
	}
	err = backup.Restore(ctx, o)
	if ex, ok := errors.AsType[*backup.ExistsError](err); ok {
		return fmt.Errorf("%s already exists; restoring would replace it: pass --force to replace it", ex.Path)
	}
	if errors.Is(err, store.ErrInUse) {
		return fmt.Errorf("--database %s: a herald process is using it; stop it before restoring", *sf.database)
	}
	if err != nil {
		return fmt.Errorf("restore of %s: %w", *from, err)
	}
	fmt.Fprintf(stdout, "herald: restored %s into %s (integrity_check ok)\n", *from, path)
	if o.KeyFile != "" {
		fmt.Fprintf(stdout, "herald: its secret key is in %s\n", o.KeyFile)
	} else {
		fmt.Fprintln(stdout, "herald: no key file was written: start herald with the same --secret-key or $HERALD_SECRET_KEY")
	}
	fmt.Fprintf(stdout, "herald: start it with: herald serve --database %s\n"+
		"herald: changes made after the copy are not in it; deliveries in flight or made after the copy are made again (same event ids)\n", *sf.database)
	return nil
}

// existingKey returns the key of an existing database: given, or read from
// its key file, which it never creates (a new key would open nothing).
func (f storeFlags) existingKey() (backup.Key, error) {
	if *f.secretKey != "" {
		k, err := secret.ParseKey(*f.secretKey)
		return backup.Key{Value: k}, err
	}
	path := f.keyPath()
	k, err := secret.ReadKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return backup.Key{}, fmt.Errorf("no key file %s: give the database's key with --secret-key or --secret-key-file", path)
	}
	return backup.Key{Value: k, File: path}, err
}

// sqlitePath returns the path of a sqlite: database URL, and refuses
// PostgreSQL, which its own tool (hint) backs up and restores.
func sqlitePath(dbURL, cmd, hint string) (string, error) {
	if err := store.CheckURL(dbURL); err != nil {
		return "", err
	}
	path, ok := strings.CutPrefix(dbURL, "sqlite:")
	if !ok {
		return "", fmt.Errorf("herald %s works on SQLite; on PostgreSQL use %s with the secret key (docs/operations.md, Backups)", cmd, hint)
	}
	if err := store.CheckExists(dbURL); err != nil && cmd == "backup" {
		return "", fmt.Errorf("--database %s: %w", dbURL, err)
	}
	return path, nil
}

// size writes a byte count readably.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
