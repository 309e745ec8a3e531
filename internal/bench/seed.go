package bench

// The history of scenario h is written straight into the store's tables,
// by SQL on the schema of today's migrations (events, webhook_event_logs,
// webhook_attempts): at ten million logs the API would take hours, and
// this file is the one place that knows those tables' columns. When the
// schema changes (the queue split from the history, partitions by day),
// change seedRows and the two writers below, and nothing else.

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
)

// history is what scenario h seeds: logs completed logs of the account's
// webhooks, spread evenly over the days before now, each event delivered
// to fanOut of them. One log in failedEvery failed after failedAttempts
// attempts; the rest succeeded at the first.
type history struct {
	accountID string
	webhooks  []string
	logs      int
	days      int
	now       time.Time
	chunk     int // logs per transaction (or COPY); seedChunk when 0
}

const (
	fanOut         = 2
	failedEvery    = 50
	failedAttempts = 3
	seedChunk      = 20_000 // logs per transaction (or per COPY), by default
)

var (
	eventCols   = []string{"id", "account_id", "kind", "body", "triggered_at"}
	logCols     = []string{"id", "account_id", "webhook_id", "event_id", "kind", "status", "attempt_count", "status_code", "sent_at", "received_at", "created_at", "updated_at", "completed_at", "undelivered_at"}
	attemptCols = []string{"log_id", "webhook_id", "number", "trigger", "sent_at", "received_at", "status_code", "duration_ms", "error", "response_body"}
)

// seedRows makes the rows of logs [from, to) of h: their events (those
// whose first log is among them), the logs and their attempts, in the
// columns above. An event's logs are created at its time, with the ids
// herald gives them (store.LogIDOf); prev is the event of the log before
// from, for a chunk that begins inside an event, and last the event of its
// last log.
func (h history) seedRows(rng *rand.Rand, from, to int, prev string) (events, logs, attempts [][]any, last string) {
	span := time.Duration(h.days) * 24 * time.Hour
	start := h.now.Add(-span)
	eventID := prev
	for i := from; i < to; i++ {
		first := i - i%fanOut // the event's first log
		at := start.Add(time.Duration(float64(span) * float64(first) / float64(h.logs)))
		t := at.UnixMilli()
		if i%fanOut == 0 {
			eventID = idAt(rng, at)
			body := fmt.Sprintf(`{"id":%q,"event":"license.created","data":{"id":%q,"productId":"0193a0b1-0000-7000-8000-000000000002","userId":null,"key":"ABCD-EFGH-IJKL-%04d","expiresAt":null,"maxActivations":null,"suspended":false,"metadata":{"seed":%d},"createdAt":%q,"updatedAt":%q},"triggeredAt":%q}`,
				eventID, idAt(rng, at), i%10000, i, at.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
			events = append(events, []any{eventID, h.accountID, "license.created", []byte(body), t})
		}
		logID := store.LogIDOf(eventID, i%fanOut)
		status, n, code := "succeeded", 1, 200
		if i%failedEvery == failedEvery-1 {
			status, n, code = "failed", failedAttempts, 500
		}
		var undelivered any // a failed log's completion (migration 0060)
		if status == "failed" {
			undelivered = t + int64(n-1)*60_000 + 40
		}
		webhook := h.webhooks[i%len(h.webhooks)]
		logs = append(logs, []any{logID, h.accountID, webhook, eventID, "license.created", status, n, code,
			t + int64(n-1)*60_000, t + int64(n-1)*60_000 + 40, t, t + int64(n-1)*60_000 + 40, t + int64(n-1)*60_000 + 40, undelivered})
		for k := 1; k <= n; k++ {
			sent := t + int64(k-1)*60_000
			c := 200
			var errText any
			if status == "failed" {
				c, errText = 500, "the receiver answered 500"
			}
			attempts = append(attempts, []any{logID, webhook, k, "automatic", sent, sent + 40, c, 40, errText, ""})
		}
	}
	return events, logs, attempts, eventID
}

// idAt makes a UUIDv7 of time at, as store.NewID makes one of now: the
// logs of the past sort by id as they would had they been made then.
func idAt(rng *rand.Rand, at time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[8:], rng.Uint64())
	binary.BigEndian.PutUint64(b[0:], uint64(at.UnixMilli())<<16|uint64(rng.Uint32()&0x0fff))
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	b[12] &= 0x7f // as store.NewIDAt's, so that the logs' ids sort after it
	return uuid.UUID(b).String()
}

// seed writes h into the store at dbURL, reporting progress to log: by COPY
// on PostgreSQL (then ANALYZE when analyze is set), in batched
// transactions of multi-row INSERTs on SQLite (which herald runs without
// statistics, so none are made).
func (h history) seed(ctx context.Context, st *store.Store, dbURL string, analyze bool, log io.Writer) error {
	rng := rand.New(rand.NewPCG(uint64(h.now.UnixNano()), 7))
	began := time.Now()
	var pg *pgx.Conn
	if st.Engine() == "postgres" {
		u, err := url.Parse(dbURL)
		if err != nil {
			return err
		}
		q := u.Query()
		for k := range q {
			if strings.HasPrefix(k, "pool_") {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
		if pg, err = pgx.Connect(ctx, u.String()); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		defer pg.Close(ctx)
	}
	// The history's days are partitions on PostgreSQL: the seeded past
	// gets its own, as herald would have made them day by day.
	if err := st.MakePartitions(ctx, h.now.Add(-time.Duration(h.days)*24*time.Hour), h.now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	var lastEvent string
	chunk := cmp.Or(h.chunk, seedChunk)
	for from := 0; from < h.logs; from += chunk {
		to := min(h.logs, from+chunk)
		var events, logs, attempts [][]any
		events, logs, attempts, lastEvent = h.seedRows(rng, from, to, lastEvent)
		var err error
		if pg != nil {
			err = pgx.BeginFunc(ctx, pg, func(tx pgx.Tx) error {
				for _, t := range []struct {
					name string
					cols []string
					rows [][]any
				}{{"events", eventCols, events}, {"webhook_event_logs", logCols, logs}, {"webhook_attempts", attemptCols, attempts}} {
					if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, pgx.CopyFromRows(t.rows)); err != nil {
						return fmt.Errorf("copy %s: %w", t.name, err)
					}
				}
				return nil
			})
		} else {
			err = st.InTx(ctx, func(tx *store.Tx) error {
				for _, t := range []struct {
					name string
					cols []string
					rows [][]any
				}{{"events", eventCols, events}, {"webhook_event_logs", logCols, logs}, {"webhook_attempts", attemptCols, attempts}} {
					if err := insertRows(ctx, tx, t.name, t.cols, t.rows); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err != nil {
			return fmt.Errorf("seed logs %d to %d: %w", from, to, err)
		}
		if to%(10*chunk) == 0 || to == h.logs {
			fmt.Fprintf(log, "bench: h: seeded %d of %d logs (%.0f/s)\n", to, h.logs, float64(to)/time.Since(began).Seconds())
		}
	}
	if pg != nil && analyze {
		if _, err := pg.Exec(ctx, `ANALYZE events, webhook_event_logs, webhook_attempts`); err != nil {
			return fmt.Errorf("seed: analyze: %w", err)
		}
	}
	return nil
}

// insertRows inserts rows into table in statements of up to 200 rows.
func insertRows(ctx context.Context, tx *store.Tx, table string, cols []string, rows [][]any) error {
	const per = 200
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	for len(rows) > 0 {
		batch := rows[:min(per, len(rows))]
		rows = rows[len(batch):]
		args := make([]any, 0, len(batch)*len(cols))
		for _, r := range batch {
			args = append(args, r...)
		}
		q := `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) VALUES ` + strings.TrimSuffix(strings.Repeat(one+", ", len(batch)), ", ")
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("insert %s: %w", table, err)
		}
	}
	return nil
}
