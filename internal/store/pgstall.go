package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// When one of herald's statements on PostgreSQL gives up (its context's
// deadline passed), what it and the database were waiting for is logged
// before pgx closes its connection (with a cancel request, so the server
// ends the statement too): the statement's wait event and the lock it
// waits for, who blocks it and what they run, and every other statement of
// the database running for over a second. An operator whose database is
// slow needs exactly this, and it is gone by the time anyone looks
// (decision 0117).

// StallReportEvery bounds how often a process logs a stall: the timeouts of
// one stall come in dozens, and the first report says what they waited for.
const StallReportEvery = 30 * time.Second

// stallReportTimeout bounds one report, connection included.
const stallReportTimeout = 3 * time.Second

// stallReporter reports statements that timed out; one per process.
type stallReporter struct {
	cfg  pgx.ConnConfig // a connection of its own, without this handler
	log  *slog.Logger
	next atomic.Int64 // Unix ns before which no report is made
}

func newStallReporter(cfg pgx.ConnConfig, log *slog.Logger) *stallReporter {
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	cfg.ConnectTimeout = stallReportTimeout
	cfg.RuntimeParams = withParam(cfg.RuntimeParams, "application_name", "")
	cfg.RuntimeParams["application_name"] = "herald-stall-report"
	return &stallReporter{cfg: cfg, log: log}
}

// watch installs the reporter on every connection cfg opens, before pgx's
// own handling of a cancelled context.
func (r *stallReporter) watch(cfg pgx.ConnConfig) pgx.ConnConfig {
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &stallWatch{report: r, conn: c, cancel: &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}}
	}
	return cfg
}

// stallWatch is one connection's handler of a cancelled context.
type stallWatch struct {
	report *stallReporter
	conn   *pgconn.PgConn
	cancel ctxwatch.Handler // pgx's default
}

// HandleCancel reports a statement whose deadline passed, while it still
// waits on the server, then hands over to pgx's default.
func (w *stallWatch) HandleCancel(ctx context.Context) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		w.report.report(w.conn.PID())
	}
	w.cancel.HandleCancel(ctx)
}

func (w *stallWatch) HandleUnwatchAfterCancel() { w.cancel.HandleUnwatchAfterCancel() }

// report logs what the statement of backend pid and the database are
// waiting for, unless a report was made in the last StallReportEvery.
func (r *stallReporter) report(pid uint32) {
	now := time.Now()
	next := r.next.Load()
	if now.UnixNano() < next || !r.next.CompareAndSwap(next, now.Add(StallReportEvery).UnixNano()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stallReportTimeout)
	defer cancel()
	waits, blockers, err := r.snapshot(ctx, pid)
	if err != nil {
		r.log.Warn("a database statement timed out, and what it waited for could not be read", "pid", pid, "err", err)
		return
	}
	timedOut := false
	for _, w := range waits {
		msg := "database statement running for over a second"
		if w.pid == pid {
			msg, timedOut = "a database statement timed out waiting", true
		}
		attrs := w.attrs()
		for _, b := range w.blockedBy {
			if bw, ok := blockers[b]; ok {
				attrs = append(attrs, slog.String("blocked_by_"+strconv.Itoa(int(b)), bw.describe()))
			}
		}
		r.log.Warn(msg, attrs...)
	}
	if !timedOut {
		r.log.Warn("a database statement timed out; the server had already ended it", "pid", pid, "running_elsewhere", len(waits))
	}
}

// stallRow is one backend as pg_stat_activity shows it.
type stallRow struct {
	pid                 uint32
	app, state          string
	waitType, waitEvent string
	seconds             float64 // of the statement, or of the transaction for a blocker
	query               string
	waitingFor          string // the locks it waits for
	blockedBy           []uint32
}

func (w stallRow) attrs() []any {
	return []any{"pid", w.pid, "application", w.app, "state", w.state, "wait_event_type", w.waitType, "wait_event", w.waitEvent,
		"waiting_for", w.waitingFor, "running_seconds", strconv.FormatFloat(w.seconds, 'f', 1, 64), "query", w.query}
}

func (w stallRow) describe() string {
	wait := ""
	if w.waitEvent != "" {
		wait = ", waiting on " + w.waitType + "/" + w.waitEvent
	}
	return fmt.Sprintf("%s (%s, %s for %.1f s in its transaction%s): %s", strconv.Itoa(int(w.pid)), w.app, w.state, w.seconds, wait, w.query)
}

// stallQueryText bounds the text of a statement in a report.
const stallQueryText = 300

// snapshot reads, on a connection of its own, the backend pid and every
// statement of the database running for over a second (with the locks
// each waits for and who blocks it), and the blockers.
func (r *stallReporter) snapshot(ctx context.Context, pid uint32) ([]stallRow, map[uint32]stallRow, error) {
	conn, err := pgx.ConnectConfig(ctx, &r.cfg)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT a.pid, COALESCE(a.application_name, ''), COALESCE(a.state, ''),
  COALESCE(a.wait_event_type, ''), COALESCE(a.wait_event, ''),
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - a.query_start), 0)::float8, left(COALESCE(a.query, ''), $2),
  COALESCE((SELECT string_agg(l.locktype || COALESCE(' ' || l.relation::regclass::text, '') || ' ' || l.mode, ', ')
    FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted), ''),
  pg_blocking_pids(a.pid)
FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
  AND (a.pid = $1 OR (a.state <> 'idle' AND a.query_start < clock_timestamp() - interval '1 second'))
ORDER BY a.pid = $1 DESC, a.query_start
LIMIT 12`, int64(pid), stallQueryText)
	if err != nil {
		return nil, nil, err
	}
	var waits []stallRow
	var blocking []int64
	for rows.Next() {
		var w stallRow
		var id int64
		var by []int64
		if err := rows.Scan(&id, &w.app, &w.state, &w.waitType, &w.waitEvent, &w.seconds, &w.query, &w.waitingFor, &by); err != nil {
			rows.Close()
			return nil, nil, err
		}
		w.pid = uint32(id)
		for _, b := range by {
			w.blockedBy = append(w.blockedBy, uint32(b))
			blocking = append(blocking, b)
		}
		w.query = oneLine(w.query)
		waits = append(waits, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	blockers := map[uint32]stallRow{}
	if len(blocking) == 0 {
		return waits, blockers, nil
	}
	rows, err = conn.Query(ctx, `SELECT pid, COALESCE(application_name, ''), COALESCE(state, ''),
  COALESCE(wait_event_type, ''), COALESCE(wait_event, ''),
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - xact_start), 0)::float8, left(COALESCE(query, ''), $2)
FROM pg_stat_activity WHERE pid = ANY($1)`, blocking, stallQueryText)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var b stallRow
		var id int64
		if err := rows.Scan(&id, &b.app, &b.state, &b.waitType, &b.waitEvent, &b.seconds, &b.query); err != nil {
			return nil, nil, err
		}
		b.pid, b.query = uint32(id), oneLine(b.query)
		blockers[b.pid] = b
	}
	return waits, blockers, rows.Err()
}

// oneLine folds a statement's whitespace, so that it reads on one log line.
func oneLine(q string) string { return strings.Join(strings.Fields(q), " ") }

// withParam returns params with name set to value, unless already set (the
// URL's own word wins), without changing params.
func withParam(params map[string]string, name, value string) map[string]string {
	out := make(map[string]string, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	if _, ok := out[name]; !ok {
		out[name] = value
	}
	return out
}
