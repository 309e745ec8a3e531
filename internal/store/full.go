package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// ErrStorageFull is attempt.ErrStorageFull: the dispatcher tells it apart
// without the store.
var ErrStorageFull = attempt.ErrStorageFull

// FullLogEvery is attempt.FullLogEvery.
const FullLogEvery = attempt.FullLogEvery

// FullRetryAfter is the Retry-After of an API or portal answer refused for a
// full disk: space is freed by a person, in minutes rather than seconds,
// and clients retrying every second would gain nothing.
const FullRetryAfter = 30 * time.Second

// storageFull reports whether err is the engine saying that its disk is
// full. modernc.org/sqlite reports SQLITE_FULL (13) at the COMMIT that could
// not append its pages to the WAL, or at the statement that had to grow a
// file (the WAL, or the database at a checkpoint); PostgreSQL answers
// SQLSTATE 53100, disk_full.
func storageFull(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "53100"
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		return lite.Code()&0xff == 13 // SQLITE_FULL, whatever its extended code
	}
	return false
}

// fullState remembers that writes are being refused for a full disk, so
// that the store says so in its log once per FullLogEvery and says when
// they are accepted again.
type fullState struct {
	on      atomic.Bool // writes are being refused: since is set
	mu      sync.Mutex
	since   time.Time // the first refusal of this spell; zero while writes work
	logged  time.Time // the last line
	refused int       // refusals since that line
}

// full returns err wrapped in ErrStorageFull when the engine refused a write
// for a full disk (and err otherwise), logging the refusal at most once per
// FullLogEvery.
func (s *Store) full(err error) error {
	if err == nil || errors.Is(err, ErrStorageFull) || !storageFull(err) {
		return err
	}
	f := &s.fullness
	f.mu.Lock()
	now := time.Now()
	if f.since.IsZero() {
		f.since = now
		f.on.Store(true)
	}
	f.refused++
	var refused int
	if now.Sub(f.logged) >= FullLogEvery {
		f.logged, refused, f.refused = now, f.refused, 0
	}
	f.mu.Unlock()
	if refused > 0 {
		s.log.Error("database disk is full: changes are refused until space is freed",
			"database", s.where, "do", s.freeSpaceAdvice(), "refused", refused)
	}
	return fmt.Errorf("%w: %w", ErrStorageFull, err)
}

// freeSpaceAdvice says what an operator does about a full disk.
func (s *Store) freeSpaceAdvice() string {
	const resume = "; herald resumes by itself, without a restart, and delivers what was committed before"
	if s.eng.name() == "sqlite" {
		return "free space on the filesystem holding the database file and its -wal file (or move them to a larger one while herald is stopped)" + resume
	}
	return "free space on the PostgreSQL server's disk" + resume
}

// wrote notes that a transaction which changed rows has committed: if
// writes were being refused for a full disk, there is space again.
func (s *Store) wrote() {
	f := &s.fullness
	if !f.on.Load() {
		return
	}
	f.mu.Lock()
	since := f.since
	f.since, f.logged, f.refused = time.Time{}, time.Time{}, 0
	f.on.Store(false)
	f.mu.Unlock()
	if !since.IsZero() {
		s.log.Info("database disk has space again: changes are accepted", "database", s.where,
			"refused_for", time.Since(since).Round(time.Second).String())
	}
}
