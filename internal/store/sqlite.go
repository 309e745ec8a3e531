package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sqliteEngine runs herald on one SQLite file: WAL so readers never wait for
// the writer, one writer connection so writes never meet SQLITE_BUSY inside
// the process, and BEGIN IMMEDIATE so a transaction takes the write lock at
// its start rather than failing to upgrade midway.
type sqliteEngine struct {
	read, write     *sql.DB
	unlock          func() // releases the lock held for the process's life: one herald per file
	stopCheckpoints func()
}

// checkpoint copies the WAL back into the database file every 200 ms, on a
// reader connection: a PASSIVE checkpoint never waits for the writer, which
// goes on appending meanwhile, and once a checkpoint has caught up SQLite
// writes the WAL from its start again, so it does not grow.
func checkpoint(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// sqliteReaders is how many connections read at once beside the writer.
const sqliteReaders = 8

func openSQLite(ctx context.Context, s *Store, path string) error {
	if path == "" {
		return fmt.Errorf("open sqlite: empty path")
	}
	// SQLite serves one herald process. A second one on the same file would
	// take over the first one's leases at start (see queue.ReleaseLeases) and
	// deliver its attempts twice, so it is refused here.
	unlock, err := LockSQLite(path)
	if errors.Is(err, ErrInUse) {
		return sqliteInUse(path)
	}
	if err != nil {
		return err
	}
	pragmas := url.Values{}
	// No automatic checkpoints: SQLite runs one inside the commit that
	// crosses 1,000 WAL pages, and that request waits for it (tens of ms).
	// checkpoint runs them beside the writer instead.
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)", "busy_timeout(10000)", "wal_autocheckpoint(0)"} {
		pragmas.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + pragmas.Encode()
	write, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		unlock()
		return fmt.Errorf("open sqlite: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxLifetime(0)
	read, err := sql.Open("sqlite", dsn)
	if err != nil {
		write.Close()
		unlock()
		return fmt.Errorf("open sqlite: %w", err)
	}
	// Every reader is kept: database/sql keeps two idle by default, and a
	// busy API then closes and reopens the others at each request, paying
	// the pragmas and every statement's preparation again (a fifth of
	// herald's CPU in bench a before).
	read.SetMaxOpenConns(sqliteReaders)
	read.SetMaxIdleConns(sqliteReaders)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		unlock()
		return fmt.Errorf("open sqlite %s: %w", path, err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go checkpoint(read, stop, done)
	s.eng = sqliteEngine{read: read, write: write, unlock: unlock, stopCheckpoints: sync.OnceFunc(func() { close(stop); <-done })}
	s.db, s.writer, s.where = read, write, path
	return nil
}

// journalInMemory keeps the writer's temporary files, its statement
// journal among them, in memory from now on. The group committer runs each
// transaction of a group under a savepoint, and SQLite journals every page
// a savepoint changes: past 64 KiB (a license and its firing come close)
// the journal moved to a temporary file for the rest of the group, created
// and written at each group (a tenth of herald's CPU in bench a). In
// memory it is emptied as each savepoint is released. It is set once the
// migrations have run: an index built over a large table sorts in
// temporary files, which should stay on disk. The writer's one connection
// lives as long as the store.
func journalInMemory(ctx context.Context, writer *sql.DB) error {
	if _, err := writer.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
		return fmt.Errorf("open sqlite: temp_store: %w", err)
	}
	return nil
}

func (sqliteEngine) caseInsensitiveLike() string { return "LIKE" }

// planned: SQLite plans each statement as it is prepared, with no
// statistics of the arguments either way.
func (sqliteEngine) planned(args []any) []any { return args }

// cached: SQLite's prepared statements are kept by its driver already.
func (sqliteEngine) cached(args []any) []any { return args }

func (sqliteEngine) name() string           { return "sqlite" }
func (sqliteEngine) rebind(q string) string { return sqliteJSON.Replace(q) }

// sqliteJSON spells the portable JSON row sources (see JSONRows) in SQLite:
// rows as jsonb_each, whose objects ->> reads without parsing each again
// (json_each's are text, parsed at every ->>: twice the CPU).
var sqliteJSON = strings.NewReplacer("json_rows(?)", "jsonb_each(?)", "json_texts(?)", "json_each(?)")

func (sqliteEngine) forUpdate() string  { return "" }
func (sqliteEngine) skipLocked() string { return "" }
func (sqliteEngine) keyShare() string   { return "" }
func (sqliteEngine) announce()          {}
func (sqliteEngine) announceExpiries()  {}
func (e sqliteEngine) close() error {
	e.stopCheckpoints()
	e.write.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`) // leave the file whole
	e.read.Close()
	err := e.write.Close()
	e.unlock() // the file may be opened again
	return err
}

// lockMigrations has nothing to do: the writer begins IMMEDIATE transactions,
// which take SQLite's write lock at once.
func (sqliteEngine) lockMigrations(context.Context, *sql.Tx) error { return nil }

// ScanIDs reads a query's one column of ids, and closes its rows.
func ScanIDs(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// rebindDollar turns ? placeholders into $1, $2, … for PostgreSQL. A ?
// inside a string literal ('why?', quotes doubled inside), a quoted
// identifier ("a?b"), a line comment (-- why?) or a block comment is text,
// not a placeholder, and is left as written. Herald's SQL uses neither
// backslash-escaped E strings nor dollar quoting.
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		var end string // what closes the quoted text starting at i
		switch {
		case c == '\'' || c == '"':
			end = string(c) // a doubled quote closes and reopens: same result
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			end = "\n"
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			end = "*/"
		case c == '?':
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		default:
			b.WriteByte(c)
			continue
		}
		j := strings.Index(q[i+1:], end)
		if c == '/' {
			j = strings.Index(q[i+2:], end)
			if j >= 0 {
				j++
			}
		}
		if j < 0 { // unterminated: the rest is quoted text
			b.WriteString(q[i:])
			break
		}
		stop := i + 1 + j + len(end)
		b.WriteString(q[i:stop])
		i = stop - 1
	}
	return b.String()
}

// sqliteInUse is ErrInUse (errors.Is says so) on opening, worded for it.
type sqliteInUse string

func (p sqliteInUse) Error() string {
	return "open sqlite " + string(p) + ": another herald process is using it (SQLite serves one process; use PostgreSQL for several)"
}

func (sqliteInUse) Is(target error) bool { return target == ErrInUse }
