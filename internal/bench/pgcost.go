package bench

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGCost is what PostgreSQL spent on a scenario's deliveries, from its own
// counters before the firing and after herald has stopped. WAL and commits
// are the server's and the database's, so whatever else runs on them at the
// time counts too; the rows are the scenario's schema's alone. CPU is the
// server's processes' (from /proc: the server must be on this machine).
type PGCost struct {
	WALBytesPerDelivery float64 `json:"walBytesPerDelivery"` // pg_current_wal_lsn() after − before
	CommitsPerDelivery  float64 `json:"commitsPerDelivery"`  // pg_stat_database.xact_commit
	// WritesPerDelivery counts the transactions that wrote: the
	// transaction ids assigned (pg_current_snapshot()'s xmax, after −
	// before), which a transaction takes at its first write. Commits
	// count read-only transactions too (a statement outside a transaction
	// block is one), which write no commit record and wait for no flush.
	WritesPerDelivery       float64 `json:"writeTransactionsPerDelivery"`
	RowsPerDelivery         float64 `json:"rowsWrittenPerDelivery"`  // inserts + updates + deletes, every table
	IndexEntriesPerDelivery float64 `json:"indexEntriesPerDelivery"` // estimated, see TableWrites
	// LogHOTRatio is the share of the updates of webhook_event_logs that
	// were HOT (wrote no index entry).
	LogHOTRatio float64 `json:"logHotUpdateRatio"`
	// CPUPer1000 is the server's CPU seconds (user and system, every
	// process of it, ended ones included) per 1,000 deliveries, over the
	// scenario's own time: from its first call to its last receipt, as
	// herald's and the machine's are. Not after: herald's connections
	// closing at its exit and the bench's reads of the statistics are no
	// delivery's cost (3–5% of the figure at 200 deliveries a second). -1
	// when /proc did not show the server.
	CPUPer1000 float64       `json:"cpuSecondsPer1000Deliveries"`
	Tables     []TableWrites `json:"tables"`
}

// TableWrites is what a scenario wrote to one table (pg_stat_user_tables).
// IndexEntries is the estimate inserts × indexes + non-HOT updates ×
// indexes, of the full indexes only: the partial indexes of the tables a
// delivery writes hold logs that were not delivered (and licenses with an
// expiry, and queued emails), which a delivered log never enters, so
// counting them, as the bench did until decision 0096 added two, counted
// entries never made.
type TableWrites struct {
	Table        string `json:"table"`
	Indexes      int    `json:"indexes"`
	Inserts      int64  `json:"inserts"`
	Updates      int64  `json:"updates"`
	HOTUpdates   int64  `json:"hotUpdates"`
	Deletes      int64  `json:"deletes"`
	IndexEntries int64  `json:"indexEntries"`
}

// pgMeter reads PostgreSQL's counters for one scenario's schema.
type pgMeter struct {
	conn     *pgx.Conn
	schema   string
	name     string // herald's connections' application_name
	before   pgSample
	pid      int     // the meter's backend, by which the server is found
	cpuStart float64 // the server's CPU once before was taken; -1 when not known
	cpuEnd   float64 // the server's CPU at the scenario's last receipt; -1 unread
	// unsettled is why before is not known to hold all of the setup's
	// writes, and so the cost is not given.
	unsettled error
}

type pgSample struct {
	lsn     string
	commits int64
	nextXID int64
	tables  map[string]TableWrites
}

// newPGMeter connects to the database of dbURL (a URL whose search_path is
// the scenario's schema) and takes the first sample, once the statistics
// show the setup's webhooks (hooks of them) written.
func newPGMeter(ctx context.Context, dbURL string, hooks int) (*pgMeter, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, err
	}
	m := &pgMeter{schema: u.Query().Get("search_path"), name: u.Query().Get("application_name"), cpuStart: -1, cpuEnd: -1}
	conn, err := pgx.Connect(ctx, adminURL(u))
	if err != nil {
		return nil, fmt.Errorf("postgres cost: %w", err)
	}
	m.conn = conn
	// The setup's writes belong before, not to the scenario, and each of
	// the connections that made them reports its statistics on its own: at
	// once when it last reported a second or more before, else when it has
	// been idle for ten seconds (PostgreSQL's PGSTAT_IDLE_INTERVAL). So
	// stillness proves nothing (a product.created held back ten seconds
	// once counted as the scenario's); the first sample is one that shows
	// every row the setup wrote (the account, the product and its event,
	// the webhooks) and has not changed since the last.
	var last map[string]TableWrites
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m.before, err = m.sample(ctx); err != nil {
			conn.Close(ctx)
			return nil, err
		}
		t := m.before.tables
		written := t["webhooks"].Inserts >= int64(hooks) && t["accounts"].Inserts >= 1 &&
			t["products"].Inserts >= 1 && t["events"].Inserts >= 1
		if written && maps.Equal(t, last) {
			m.cpuStart = serverCPU(m.pid)
			return m, nil
		}
		if time.Now().After(deadline) { // the scenario runs; its cost is not given
			m.unsettled = fmt.Errorf("the setup's writes had not all shown in pg_stat_user_tables after 30 s: %v", t)
			return m, nil
		}
		last = t
		time.Sleep(1500 * time.Millisecond)
	}
}

func (m *pgMeter) close() { m.conn.Close(context.Background()) }

// adminURL is u without herald's own parameters (pool settings, which the
// server would refuse; the schema; the connections' name).
func adminURL(u *url.URL) string {
	a := *u
	q := a.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") || k == "search_path" || k == "application_name" {
			q.Del(k)
		}
	}
	a.RawQuery = q.Encode()
	return a.String()
}

func (m *pgMeter) sample(ctx context.Context) (pgSample, error) {
	s := pgSample{tables: map[string]TableWrites{}}
	// A new snapshot of the statistics, not the one this connection read
	// last (stats_fetch_consistency).
	if _, err := m.conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return s, fmt.Errorf("postgres cost: %w", err)
	}
	var pid int
	err := m.conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, xact_commit, pg_backend_pid(),
  CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS TEXT) AS BIGINT)
FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.lsn, &s.commits, &pid, &s.nextXID)
	if err != nil {
		return s, fmt.Errorf("postgres cost: %w", err)
	}
	m.pid = pid
	// A partition (the history's days, decision 0090) counts as its
	// table: its writes are added up, and it has the table's indexes.
	rows, err := m.conn.Query(ctx, `SELECT COALESCE((SELECT p.relname FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent WHERE h.inhrelid = t.relid), t.relname),
  t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd, t.n_tup_del,
  (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid AND i.indpred IS NULL)
FROM pg_stat_user_tables t WHERE t.schemaname = $1`, m.schema)
	if err != nil {
		return s, fmt.Errorf("postgres cost: %w", err)
	}
	for rows.Next() {
		var t TableWrites
		if err := rows.Scan(&t.Table, &t.Inserts, &t.Updates, &t.HOTUpdates, &t.Deletes, &t.Indexes); err != nil {
			return s, fmt.Errorf("postgres cost: %w", err)
		}
		sum := s.tables[t.Table]
		sum.Table, sum.Indexes = t.Table, t.Indexes
		sum.Inserts += t.Inserts
		sum.Updates += t.Updates
		sum.HOTUpdates += t.HOTUpdates
		sum.Deletes += t.Deletes
		s.tables[t.Table] = sum
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("postgres cost: %w", err)
	}
	return s, nil
}

// ended reads the server's CPU at the scenario's last receipt (from /proc:
// no statement, so that reading costs the server nothing); the first
// reading counts.
func (m *pgMeter) ended() {
	if m.cpuEnd < 0 && m.pid > 0 {
		m.cpuEnd = serverCPU(m.pid)
	}
}

// cost takes the second sample and divides by deliveries.
func (m *pgMeter) cost(ctx context.Context, deliveries int) (*PGCost, error) {
	if m.unsettled != nil {
		return nil, m.unsettled
	}
	// Ended connections flush their statistics as they exit, before they
	// leave pg_stat_activity, and the server reaps them (counting their
	// CPU) soon after: the figures are read once herald's connections have
	// all gone and the schema's figures have stopped moving (at most 30 s
	// and 15 s on).
	for deadline := time.Now().Add(30 * time.Second); m.name != "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var n int
		if err := m.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, m.name).Scan(&n); err != nil {
			return nil, fmt.Errorf("postgres cost: %w", err)
		}
		if n == 0 {
			break
		}
	}
	time.Sleep(time.Second)
	after, err := m.sample(ctx)
	for deadline := time.Now().Add(15 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		var again pgSample
		if again, err = m.sample(ctx); err == nil && maps.Equal(again.tables, after.tables) {
			after = again
			break
		}
		after = again
	}
	if err != nil {
		return nil, err
	}
	var wal int64
	if err := m.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, after.lsn, m.before.lsn).Scan(&wal); err != nil {
		return nil, fmt.Errorf("postgres cost: %w", err)
	}
	per := func(v float64) float64 {
		if deliveries == 0 {
			return 0
		}
		return v / float64(deliveries)
	}
	c := &PGCost{WALBytesPerDelivery: per(float64(wal)), CommitsPerDelivery: per(float64(after.commits - m.before.commits)),
		WritesPerDelivery: per(float64(after.nextXID - m.before.nextXID)), CPUPer1000: -1}
	var rows, entries int64
	for name, a := range after.tables {
		b := m.before.tables[name]
		t := TableWrites{Table: name, Indexes: a.Indexes, Inserts: a.Inserts - b.Inserts, Updates: a.Updates - b.Updates,
			HOTUpdates: a.HOTUpdates - b.HOTUpdates, Deletes: a.Deletes - b.Deletes}
		t.IndexEntries = int64(t.Indexes) * (t.Inserts + t.Updates - t.HOTUpdates)
		if t.Inserts+t.Updates+t.Deletes == 0 {
			continue
		}
		rows += t.Inserts + t.Updates + t.Deletes
		entries += t.IndexEntries
		if name == "webhook_event_logs" && t.Updates > 0 {
			c.LogHOTRatio = float64(t.HOTUpdates) / float64(t.Updates)
		}
		c.Tables = append(c.Tables, t)
	}
	slices.SortFunc(c.Tables, func(x, y TableWrites) int { return strings.Compare(x.Table, y.Table) })
	c.RowsPerDelivery, c.IndexEntriesPerDelivery = per(float64(rows)), per(float64(entries))
	if m.cpuStart >= 0 && m.cpuEnd >= 0 {
		c.CPUPer1000 = per(m.cpuEnd-m.cpuStart) * 1000
	}
	return c, nil
}

// serverCPU sums the CPU seconds of the PostgreSQL server that backend
// belongs to: its postmaster's own and its ended children's (reaped into
// the postmaster's cutime and cstime), and each live child's. -1 when
// /proc does not show it (a server on another machine).
func serverCPU(backend int) float64 {
	post := procPPid(backend)
	if post <= 0 {
		return -1
	}
	total, ok := procCPU(post, true)
	if !ok {
		return -1
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == post || procPPid(pid) != post {
			continue
		}
		if cpu, ok := procCPU(pid, true); ok {
			total += cpu
		}
	}
	return total
}

// procStat returns the fields of /proc/pid/stat after the command name.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil
	}
	return strings.Fields(string(b[i+2:]))
}

func procPPid(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return -1
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// procCPU is a process's user and system seconds, with its reaped
// children's when children is set.
func procCPU(pid int, children bool) (float64, bool) {
	f := procStat(pid)
	if len(f) < 15 {
		return 0, false
	}
	n := 2
	if children {
		n = 4
	}
	var ticks float64
	for _, v := range f[11 : 11+n] {
		x, _ := strconv.ParseFloat(v, 64)
		ticks += x
	}
	return ticks / 100, true // USER_HZ is 100 on Linux
}
