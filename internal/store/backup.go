package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/internal/secret"
)

// Copies of a SQLite herald, for `herald backup` and `herald restore`
// (package backup handles the files; the SQL is here).

// CopySQLite writes a consistent copy of the SQLite database at path into
// the new file to, while a herald may be running on it: VACUUM INTO reads
// one snapshot (a read transaction, which in WAL mode never waits for the
// writer nor holds it up) and writes it out compacted, as a file of its
// own with no -wal beside it. The copy holds every transaction committed
// before it began and nothing after. The source is opened read-only, so a
// copy never changes the database it copies. to must not exist.
//
// While the copy runs, checkpoints cannot pass its snapshot, so the
// database's -wal file grows by what is written meanwhile, and shrinks back
// at the next checkpoint after it.
func CopySQLite(ctx context.Context, path, to string) error {
	db, err := openFile(path, "ro")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, to); err != nil {
		return fmt.Errorf("copy %s to %s: %w", path, to, err)
	}
	return nil
}

// CheckSQLiteCopy checks a copy made by CopySQLite (or any herald SQLite
// file no process is using): PRAGMA integrity_check must answer ok, and the
// database must have been created with key, without which its webhook
// tokens cannot be read. The file is opened read-only.
func CheckSQLiteCopy(ctx context.Context, path string, key []byte) error {
	box, err := secret.New(key)
	if err != nil {
		return err
	}
	db, err := openFile(path, "ro")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return fmt.Errorf("check %s: %w", path, err)
		}
		problems = append(problems, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		problems = append(problems, "none listed")
		return fmt.Errorf("check %s: integrity_check found problems, the first: %s", path, problems[0])
	}
	var stored string
	err = db.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'key_check'`).Scan(&stored)
	if err != nil {
		return fmt.Errorf("check %s: not a herald database: %w", path, err)
	}
	if stored != box.Check() {
		return fmt.Errorf("check %s: the secret key is not the one this database was created with", path)
	}
	return nil
}

// openFile opens an existing SQLite file in mode ("ro" or "rw"), never
// creating it, waiting up to 10 s for another connection's lock.
func openFile(path, mode string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	q := url.Values{"mode": {mode}, "_pragma": {"busy_timeout(10000)"}}
	db, err := sql.Open("sqlite", "file:"+strings.ReplaceAll(path, "?", "%3f")+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// ErrInUse is LockSQLite's answer while a herald process has the file open.
var ErrInUse = errors.New("a herald process is using it")

// LockSQLite takes the lock a herald process holds on a SQLite file for as
// long as it runs (a flock on PATH.lock), so that nothing else starts on
// the file until release is called. It returns an error wrapping ErrInUse
// if a herald process holds it.
func LockSQLite(path string) (release func(), err error) {
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sqlite lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite %s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("lock sqlite %s: %w", path, err)
	}
	return func() { lock.Close() }, nil
}
