package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// On PostgreSQL the history (events, webhook_event_logs, webhook_attempts)
// is partitioned by day on its UUIDv7 text id (attempts on their log's id,
// so a log's attempts live in its log's day), migration 0070 and decision
// 0090. The bounds are computed here, in Go, and nowhere else: the same
// function makes the partitions and picks those retention may drop.

// PartitionsAhead is how many days after today herald keeps partitions
// made, so that an insert lands in its day's partition even when the maker
// has not run for a week.
const PartitionsAhead = 7

// day is one length of a partition.
const day = 24 * time.Hour

// historyTables are the partitioned tables, each with the column it is
// partitioned on and the storage parameters of its partitions (a
// partitioned table itself holds no rows and takes none).
var historyTables = []struct{ name, key, with string }{
	{"events", "id", ""},
	{"webhook_event_logs", "id", " WITH (fillfactor = 45)"},
	{"webhook_attempts", "log_id", ""},
}

// Day returns the UTC day that t falls in, as its first instant.
func Day(t time.Time) time.Time {
	return t.UTC().Truncate(day)
}

// DayBound returns the lower bound of the partition of the UTC day of t:
// the UUIDv7 text of that day's first millisecond with every other bit
// zero (version 7, variant 10), which sorts after every id made before that
// millisecond and at or before every id made from it on. Day D's partition
// holds [DayBound(D), DayBound(D+1)).
func DayBound(t time.Time) string {
	return IDBound(Day(t))
}

// IDBound returns the least UUIDv7 text id of t's millisecond: every id
// made before it sorts before it, every id made at or after it sorts at or
// after it.
func IDBound(t time.Time) string {
	ms := max(t.UnixMilli(), 0) // UUIDv7 has no time before 1970
	h := fmt.Sprintf("%012x", uint64(ms)&(1<<48-1))
	return h[:8] + "-" + h[8:] + "-7000-8000-000000000000"
}

// idSlack is how far the id of a log fired before decision 0100 may have
// been made after its created_at (the firing transaction read its clock,
// then made its ids by the wall clock), or an event's logs after the event:
// the margin of the id bounds that let a filter by time or by event prune
// the history's partitions where the ids do not tell the time exactly.
const idSlack = time.Hour

// DayOfID returns the UTC day in which a UUIDv7 text id was made, and false
// for an id of any other shape (such an id lands in the default partition).
func DayOfID(id string) (time.Time, bool) {
	t, ok := timeOfIDOK(id)
	return Day(t), ok
}

// timeOfIDOK returns the millisecond a UUIDv7 text id was made in, and
// false for an id of another shape.
func timeOfIDOK(id string) (time.Time, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[14] != '7' || id[18] != '-' || id[23] != '-' {
		return time.Time{}, false
	}
	var ms int64
	for _, c := range id[:8] + id[9:13] {
		var v int64
		switch {
		case c >= '0' && c <= '9':
			v = int64(c - '0')
		case c >= 'a' && c <= 'f':
			v = int64(c-'a') + 10
		default:
			return time.Time{}, false
		}
		ms = ms<<4 | v
	}
	return time.UnixMilli(ms).UTC(), true
}

// NewIDAt returns a UUIDv7 text id of instant t's millisecond. Events and
// their logs are given ids of the firing's instant, their triggered_at and
// created_at, so that a log's id tells its created_at to the millisecond
// and, on PostgreSQL, a filter by creation time is a range of the account's
// ids with no index of its own (decision 0100); tests and seeds use it to
// write history of the past.
//
// The 12 bits after the version and the 30 after the variant are a counter
// of the process's ids, started at random, so that the ids the process
// makes in one millisecond sort in the order it made them (a batch's events
// in their order, each event before its logs, one transaction's before the
// next's) as NewID's do, and two processes' ids of one millisecond are far
// apart. The counter has 2^41 ids of room before it wraps, at which one
// millisecond's order is lost. The last 32 bits are random but for the
// first, 0, so that the ids LogIDOf makes from an event's sort after it.
func NewIDAt(t time.Time) string {
	ms := uint64(max(t.UnixMilli(), 0)) & (1<<48 - 1)
	seq := idSeq.Add(1) & (1<<42 - 1)
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[0:], ms<<16|0x7000|seq>>30)
	binary.BigEndian.PutUint64(u[8:], 1<<63|(seq&(1<<30-1))<<32|uint64(rand.Uint32()>>1))
	return u.String()
}

// LogIDOf returns the id of the n-th log (from 0) of the event whose id is
// eventID: the event's first 96 bits (its millisecond and its process's
// counter) and, for the last 32, the event's own (NewIDAt's 31 random bits)
// plus 1 + n. An event's logs therefore sort together, in the order they
// were made, after the event's id and before the next event's; their ids
// tell the firing's millisecond as the event's does; and on PostgreSQL they
// are one narrow range of the logs' key (EventLogIDs), so the logs need no
// index on their event (decision 0104). The tail cannot wrap for fewer
// than 2^31 logs of one event, far past any account's webhooks. For an
// event id of another shape it returns NewID's.
func LogIDOf(eventID string, n int) string {
	prefix, ok := eventPrefix(eventID)
	tail, err := strconv.ParseUint(eventID[len(prefix):], 16, 32)
	if !ok || err != nil || n < 0 || n >= 1<<31-1 {
		return NewID()
	}
	return prefix + fmt.Sprintf("%08x", tail&(1<<31-1)+1+uint64(n))
}

// EventLogIDs returns the bounds, lo inclusive and hi exclusive, of the ids
// LogIDOf gives the logs of the event eventID, and false for an id of
// another shape. Two events of two processes could share their first 96
// bits, so a read of one event's logs keeps its condition on event_id.
func EventLogIDs(eventID string) (lo, hi string, ok bool) {
	prefix, ok := eventPrefix(eventID)
	if !ok {
		return "", "", false
	}
	// "g" sorts after every hex digit, in byte order and at any
	// collation's first level.
	return prefix + "00000000", prefix + "g", true
}

// eventPrefix returns the text of a UUIDv7 text id's first 96 bits, and
// false for an id of another shape.
func eventPrefix(id string) (string, bool) {
	if _, ok := timeOfIDOK(id); !ok {
		return "", false
	}
	for i, c := range id[:28] {
		if i != 8 && i != 13 && i != 18 && i != 23 && (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return id[:28], true
}

// idSeq is NewIDAt's counter.
var idSeq = func() *atomic.Uint64 {
	var c atomic.Uint64
	c.Store(rand.Uint64N(1 << 41))
	return &c
}()

// partitionName names the partition of table for the given day.
func partitionName(table string, d time.Time) string {
	return table + "_p" + d.UTC().Format("20060102")
}

// partitionDay reads the day back from a partition's name, false for the
// default partition or a name herald did not make.
func partitionDay(table, name string) (time.Time, bool) {
	s, ok := strings.CutPrefix(name, table+"_p")
	if !ok {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", s)
	return d, err == nil
}

// partitionLock serialises the processes that make and drop partitions in
// one schema (two CREATE TABLE … PARTITION OF of one name at once collide
// even with IF NOT EXISTS).
const partitionLock = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.herald_partitions'))`

// partitionLockTimeout bounds the wait for a partitioned table's lock:
// making or dropping a partition takes it exclusively for an instant, and
// a statement queued behind a long reader would stall every insert queued
// behind it. The maker and retention try again at their next turn.
const partitionLockTimeout = `SET LOCAL lock_timeout = '3s'`

// MakePartitions makes, on PostgreSQL, the day partitions of the history
// tables from the day of from through the day of to that are not made yet,
// moving into each the rows that landed in the default partition meanwhile.
// Several processes may call it at once. On SQLite it does nothing.
func (s *Store) MakePartitions(ctx context.Context, from, to time.Time) error {
	if s.eng.name() != "postgres" {
		return nil
	}
	have, err := s.partitionDays(ctx, s.db)
	if err != nil {
		return fmt.Errorf("make partitions: %w", err)
	}
	for d := Day(from); !d.After(Day(to)); d = d.Add(day) {
		if have[d] == len(historyTables) {
			continue
		}
		err := s.InTx(ctx, func(tx *Tx) error {
			if err := lockPartitions(ctx, tx.tx); err != nil {
				return err
			}
			return makeDay(ctx, tx.tx, d)
		})
		if err != nil {
			return fmt.Errorf("make partitions of %s: %w", d.Format(time.DateOnly), err)
		}
	}
	return nil
}

// MakePartitionsAhead makes the partitions of today through PartitionsAhead
// days after it, by the wall clock (the clock that, in service, stamps the
// history's ids; a test's clock far from it fires into the default
// partition), and analyses those of the two days before today that never
// were: a partition is made empty, and where autovacuum is off (as at some
// operators') nothing else would give the planner its statistics once its
// day is written.
func (s *Store) MakePartitionsAhead(ctx context.Context) error {
	now := time.Now()
	if err := s.MakePartitions(ctx, now, now.Add(PartitionsAhead*day)); err != nil {
		return err
	}
	if s.eng.name() != "postgres" {
		return nil
	}
	for _, d := range []time.Time{Day(now).Add(-2 * day), Day(now).Add(-day)} {
		for _, t := range historyTables {
			name := partitionName(t.name, d)
			var never bool
			err := s.db.QueryRowContext(ctx, `SELECT COALESCE((SELECT reltuples < 0 FROM pg_class WHERE oid = to_regclass($1)), false)`, name).Scan(&never)
			if err != nil {
				return fmt.Errorf("analyse %s: %w", name, err)
			}
			if !never {
				continue
			}
			if _, err := s.db.ExecContext(ctx, `ANALYZE `+name); err != nil {
				return fmt.Errorf("analyse %s: %w", name, err)
			}
		}
	}
	return nil
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// partitionDays counts, for each day, how many of the history tables have
// its partition.
func (s *Store) partitionDays(ctx context.Context, q querier) (map[time.Time]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.relname, c.relname FROM pg_inherits i
JOIN pg_class p ON p.oid = i.inhparent JOIN pg_class c ON c.oid = i.inhrelid
WHERE p.relnamespace = current_schema()::regnamespace AND p.relname IN ('events', 'webhook_event_logs', 'webhook_attempts')`)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	have := map[time.Time]int{}
	for rows.Next() {
		var parent, name string
		if err := rows.Scan(&parent, &name); err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		if d, ok := partitionDay(parent, name); ok {
			have[d]++
		}
	}
	return have, rows.Err()
}

// makeDay makes the missing partitions of day d in tx, which holds
// partitionLock. A partition whose rows already sit in the default one (the
// maker fell behind the clock) is made apart, filled from the default and
// then attached, as PostgreSQL will not make a partition over rows of the
// default.
func makeDay(ctx context.Context, tx *sql.Tx, d time.Time) error {
	lo, hi := DayBound(d), DayBound(d.Add(day))
	for _, t := range historyTables {
		name := partitionName(t.name, d)
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			continue
		}
		var stray bool
		err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s_default WHERE %s >= $1 AND %s < $2)`, t.name, t.key, t.key), lo, hi).Scan(&stray)
		if err != nil {
			return fmt.Errorf("look in %s_default: %w", t.name, err)
		}
		bounds := fmt.Sprintf(`FOR VALUES FROM ('%s') TO ('%s')`, lo, hi)
		if !stray {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s %s%s`, name, t.name, bounds, t.with)); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			continue
		}
		for _, q := range []string{
			fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS)%s`, name, t.name, t.with),
			fmt.Sprintf(`WITH moved AS (DELETE FROM %s_default WHERE %s >= '%s' AND %s < '%s' RETURNING *) INSERT INTO %s SELECT * FROM moved`, t.name, t.key, lo, t.key, hi, name),
			fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s %s`, t.name, name, bounds),
			`ANALYZE ` + name,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("move the rows of %s out of the default partition: %w", name, err)
			}
		}
	}
	return nil
}

// DroppedDay is what DropDays removed of one day.
type DroppedDay struct {
	Day          time.Time
	Logs, Events int
}

// DropDays drops, on PostgreSQL, the day partitions of the history whose
// whole day is before before and whose logs all completed before it: the
// logs and attempts of such a day go whole (no row is deleted one by one,
// so no per-row WAL is written and the space is the file system's again at
// once). A day that still holds a queued, pending or retrying log, or one
// completed since before (a resend), is kept for PurgeLogs to thin row by
// row. A day's events go with it unless a log of another day refers to one
// of them (an event fired just before midnight, its logs just after); they
// then wait for that day. The recovery entries of the dropped logs go with
// them. On SQLite it does nothing.
func (s *Store) DropDays(ctx context.Context, before time.Time) ([]DroppedDay, error) {
	if s.eng.name() != "postgres" {
		return nil, nil
	}
	have, err := s.partitionDays(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("drop days: %w", err)
	}
	// Never today's or a later day's by the wall clock, whatever the
	// store's clock says: in service the ids, and so the days, follow it.
	last := before
	if today := Day(time.Now()); last.After(today) {
		last = today
	}
	var days []time.Time
	for d := range have {
		if !d.Add(day).After(last) {
			days = append(days, d)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
	var dropped []DroppedDay
	for _, d := range days {
		var got DroppedDay
		err := s.InTx(ctx, func(tx *Tx) error {
			if err := lockPartitions(ctx, tx.tx); err != nil {
				return err
			}
			var err error
			got, err = dropDay(ctx, tx.tx, d, before, s.dayLogsEnd(d))
			return err
		})
		if err != nil {
			return dropped, fmt.Errorf("drop the partitions of %s: %w", d.Format(time.DateOnly), err)
		}
		if !got.Day.IsZero() {
			dropped = append(dropped, got)
		}
	}
	return dropped, nil
}

// dayLogsEnd bounds above the ids of the logs of day d's events: the day's
// end where every event of the day had its logs' ids made by LogIDOf, of
// the event's millisecond (decision 0104); idSlack after it for a day
// before, when a log's id could be made after its event's.
func (s *Store) dayLogsEnd(d time.Time) string {
	if s.eventLogIDs && ms(Day(d)) >= s.eventLogIDsFrom {
		return DayBound(d.Add(day))
	}
	return IDBound(Day(d).Add(day + idSlack))
}

// dropDay drops what it may of day d in tx, which holds partitionLock; a
// zero Day in its answer says it dropped nothing. logsEnd bounds above the
// ids of the logs of the day's events (dayLogsEnd).
func dropDay(ctx context.Context, tx *sql.Tx, d, before time.Time, logsEnd string) (DroppedDay, error) {
	lo, hi := DayBound(d), DayBound(d.Add(day))
	logs, attempts, events := partitionName("webhook_event_logs", d), partitionName("webhook_attempts", d), partitionName("events", d)
	exists := func(name string) (bool, error) {
		var ok bool
		err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok)
		return ok, err
	}
	got := DroppedDay{}
	hasLogs, err := exists(logs)
	if err != nil {
		return got, err
	}
	if hasLogs {
		// The queue holds every log that waits or is in flight; its key
		// is the log's id, so this is a range read of its primary key.
		var queued, recent bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_queue WHERE log_id >= $1 AND log_id < $2)`, lo, hi).Scan(&queued); err != nil {
			return got, fmt.Errorf("look for waiting logs: %w", err)
		}
		if queued {
			return got, nil
		}
		// One read of the day, which also counts what goes.
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(bool_or(completed_at IS NULL OR completed_at >= $1
  OR status NOT IN ('succeeded', 'failed', 'cancelled')), false) FROM `+logs, ms(before)).Scan(&got.Logs, &recent)
		if err != nil {
			return got, fmt.Errorf("look for waiting logs: %w", err)
		}
		if recent {
			return DroppedDay{}, nil
		}
		// What the foreign key's cascade did before the history was
		// partitioned (decision 0090).
		if _, err := tx.ExecContext(ctx, `DELETE FROM recovery_logs WHERE log_id >= $1 AND log_id < $2`, lo, hi); err != nil {
			return got, fmt.Errorf("forget the recovery entries: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+attempts+`, `+logs); err != nil {
			return got, err
		}
		got.Day = d
	} else {
		// Attempts without their day's logs are ones whose logs went
		// row by row; they go too.
		hasAttempts, err := exists(attempts)
		if err != nil {
			return got, err
		}
		if hasAttempts {
			if _, err := tx.ExecContext(ctx, `DROP TABLE `+attempts); err != nil {
				return got, err
			}
			got.Day = d
		}
	}
	hasEvents, err := exists(events)
	if err != nil || !hasEvents {
		return got, err
	}
	// The logs have no index on their event (decision 0104): the day's
	// events' logs are looked for among the logs of the day (and the slack
	// after it, for older ones), through their key.
	var referred bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_event_logs WHERE id >= $1 AND id < $3 AND event_id >= $1 AND event_id < $2)`,
		lo, hi, logsEnd).Scan(&referred); err != nil {
		return got, fmt.Errorf("look for logs of the day's events: %w", err)
	}
	if referred {
		return got, nil
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+events).Scan(&got.Events); err != nil {
		return got, err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+events); err != nil {
		return got, err
	}
	got.Day = d
	return got, nil
}

// partitionHistory is migration 0070's own step, after its SQL made the
// partitioned tables beside the old ones (renamed *_unpartitioned): it
// makes the partition of every day that has rows and of the days ahead,
// copies the rows over, drops the old tables and analyses the new ones.
func partitionHistory(ctx context.Context, tx *sql.Tx) error {
	days := map[time.Time]bool{}
	for _, t := range historyTables {
		// A walk of the old primary key by whole days: one index probe per
		// day that has rows, however many rows a day holds.
		cursor, inclusive := "", true
		for {
			op := ">"
			if inclusive {
				op = ">="
			}
			var id sql.NullString
			err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT MIN(%s) FROM %s_unpartitioned WHERE %s %s $1`, t.key, t.name, t.key, op), cursor).Scan(&id)
			if err != nil {
				return fmt.Errorf("find the days of %s: %w", t.name, err)
			}
			if !id.Valid {
				break
			}
			d, ok := DayOfID(id.String)
			if !ok || DayBound(d.Add(day)) <= id.String {
				// Not a UUIDv7 id: it goes to the default partition.
				cursor, inclusive = id.String, false
				continue
			}
			days[d] = true
			cursor, inclusive = DayBound(d.Add(day)), true
		}
	}
	now := time.Now()
	for d := Day(now); !d.After(Day(now.Add(PartitionsAhead * day))); d = d.Add(day) {
		days[d] = true
	}
	for _, t := range historyTables {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s_default PARTITION OF %s DEFAULT%s`, t.name, t.name, t.with)); err != nil {
			return fmt.Errorf("create %s_default: %w", t.name, err)
		}
	}
	for d := range days {
		if err := makeDay(ctx, tx, d); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`INSERT INTO events (id, account_id, kind, body, triggered_at, trace_parent)
SELECT id, account_id, kind, body, triggered_at, trace_parent FROM events_unpartitioned`,
		`INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, due_at, lease, status_code, sent_at,
  received_at, retry_reason, created_at, updated_at, completed_at, resend_until, undelivered_at)
SELECT id, account_id, webhook_id, event_id, kind, status, attempt_count, due_at, lease, status_code, sent_at,
  received_at, retry_reason, created_at, updated_at, completed_at, resend_until, undelivered_at FROM webhook_event_logs_unpartitioned`,
		`INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers)
SELECT log_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers FROM webhook_attempts_unpartitioned`,
		`DROP TABLE webhook_attempts_unpartitioned, webhook_event_logs_unpartitioned, events_unpartitioned`,
		// Autovacuum may be off; the planner must not guess at what was
		// just loaded. ANALYZE of a partitioned table also analyses each
		// of its partitions.
		`ANALYZE events, webhook_event_logs, webhook_attempts`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("partition the history: %w", err)
		}
	}
	return nil
}

// lockPartitions takes partitionLock in tx, bounding its waits for locks.
func lockPartitions(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{partitionLockTimeout, partitionLock} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("lock the partitions: %w", err)
		}
	}
	return nil
}

// IDRange returns the least and the greatest of ids when each is the
// canonical text of a UUID (NewID's: lowercase hex digits, hyphens at the
// same four places): for such texts Go's byte order is the order of any
// collation PostgreSQL may compare them by, which either weighs a hyphen
// below every digit and letter or passes over it, so id BETWEEN lo AND hi
// holds each of them there too. ok is false for an empty ids or any id of
// another shape.
func IDRange(ids []string) (lo, hi string, ok bool) {
	for i, id := range ids {
		if !canonicalUUID(id) {
			return "", "", false
		}
		if i == 0 || id < lo {
			lo = id
		}
		if i == 0 || id > hi {
			hi = id
		}
	}
	return lo, hi, len(ids) > 0
}

// canonicalUUID reports whether s is a UUID written as NewID writes one,
// the same check the API makes of an id it is given.
func canonicalUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}
