package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// Helpers for the tests of the store and of the packages above it that
// need the store's own rows (licensing's, retention's): a PostgreSQL store
// on a clock the test holds, an account with a webhook, where a row lives,
// a day of history written as an older herald did, shared statements of
// changes held, and the WAL a statement writes.

// OpenPostgres opens a store on the database at url, with the clock that now
// points to (nil: the wall clock), closed at the test's end.
func OpenPostgres(t testing.TB, url string, now *time.Time) *store.Store {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	opts := store.Options{Key: make([]byte, 32), Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return *now }}
	if now == nil { // the wall clock, as herald serve has it
		opts.Now = nil
	}
	st, err := store.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// AccountWithWebhook makes an account on st with one webhook of
// license.created.
func AccountWithWebhook(t testing.TB, st *store.Store) (store.Account, store.Webhook) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
	if err != nil {
		t.Fatal(err)
	}
	return acct, hook
}

// PostgresWithWebhook opens a store on a new PostgreSQL schema whose clock
// is *now (nil: the wall clock), with an account and its webhook.
func PostgresWithWebhook(t testing.TB, now *time.Time) (*store.Store, store.Account, store.Webhook) {
	t.Helper()
	testdb.PostgresHandles(t, 1)
	st := OpenPostgres(t, testdb.PostgresURL(t), now)
	acct, hook := AccountWithWebhook(t, st)
	return st, acct, hook
}

// EachEngine runs fn on a fresh SQLite file and on a fresh PostgreSQL
// schema, in parallel, each with a random key and a clock the test moves.
func EachEngine(t *testing.T, fn func(t *testing.T, st *store.Store, clock *time.Time)) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", testdb.SQLiteURL}, {"postgres", testdb.PostgresURL}} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			clock := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
			key := make([]byte, 32)
			rand.Read(key)
			st, err := store.Open(context.Background(), e.url(t), store.Options{Key: key, Now: func() time.Time { return clock }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			fn(t, st, &clock)
		})
	}
}

// Where names the partition holding the row of table whose key is id.
func Where(t testing.TB, st *store.Store, table, key, id string) string {
	t.Helper()
	var name string
	if err := st.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM `+table+` WHERE `+key+` = ? LIMIT 1`, id).Scan(&name); err != nil {
		t.Fatalf("find %s %s: %v", table, id, err)
	}
	return name
}

func Exists(t testing.TB, st *store.Store, name string) bool {
	t.Helper()
	var ok bool
	if err := st.QueryRow(context.Background(), `SELECT to_regclass(?) IS NOT NULL`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// History writes, into day d, an event and n logs of it completed at
// completed, each with one attempt, and returns the ids of the logs.
func History(t testing.TB, st *store.Store, acct store.Account, hook store.Webhook, eventAt time.Time, logsAt time.Time, n int, completed time.Time) (string, []string) {
	t.Helper()
	ctx := context.Background()
	ev := store.NewIDAt(eventAt)
	var ids []string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.created', ?, ?)`,
			ev, acct.ID, []byte(`{}`), store.MS(eventAt)); err != nil {
			return err
		}
		for i := range n {
			// Logs fired with their event have the ids herald gives them
			// (decision 0104); others model logs written before it, their
			// ids made after their creation (decision 0100).
			id := store.LogIDOf(ev, i)
			if !logsAt.Equal(eventAt) {
				id = store.NewIDAt(logsAt.Add(time.Duration(i) * time.Millisecond))
			}
			ids = append(ids, id)
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, status_code,
  created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, 'license.created', 'succeeded', 1, 200, ?, ?, ?)`,
				id, acct.ID, hook.ID, ev, store.MS(logsAt), store.MS(completed), store.MS(completed)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, status_code, duration_ms, response_body)
VALUES (?, 1, 'automatic', ?, 200, 5, 'ok')`, id, store.MS(logsAt)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ev, ids
}

// Partition names the partition of table that holds day d.
func Partition(table string, d time.Time) string { return table + "_p" + d.UTC().Format("20060102") }

// HoldBatches has st run one shared statement at a time and holds its
// first statement, before it runs, until release is closed; held is closed
// once it is held. fn, if given, runs before each later statement (the
// n-th, from 2).
func HoldBatches(t testing.TB, st *store.Store, fn func(n int)) (held, release chan struct{}) {
	t.Helper()
	store.SetChangeBatchesAtOnce(st, 1)
	held, release = make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	store.SetBeforeChange(st, func() {
		switch i := int(n.Add(1)); i {
		case 1:
			close(held)
			<-release
		default:
			if fn != nil {
				fn(i)
			}
		}
	})
	t.Cleanup(func() { store.SetBeforeChange(st, nil) })
	return held, release
}

// WaitForBatched waits until n changes wait for st's next shared statement.
func WaitForBatched(t testing.TB, st *store.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, waiting := store.ChangeBatches(st); waiting == n {
			return
		}
		if time.Now().After(deadline) {
			_, waiting := store.ChangeBatches(st)
			t.Fatalf("%d changes wait for a statement; want %d", waiting, n)
		}
	}
}

func NewWALBench(b *testing.B, hooks int) *WALBench {
	b.Helper()
	url := testdb.PostgresURL(b)
	ctx := context.Background()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	rawURL, err := testdb.RawURL(url)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("pgx", rawURL)
	if err != nil {
		b.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	b.Cleanup(func() { raw.Close() })
	w := &WALBench{b: b, St: st, Raw: raw}
	if w.Acct, err = st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()}); err != nil {
		b.Fatal(err)
	}
	for i := range hooks {
		hook, err := st.CreateWebhook(ctx, w.Acct.ID, store.NewWebhook{Name: fmt.Sprint("h", i), URL: fmt.Sprintf("https://example.com/h%d", i),
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
		if err != nil {
			b.Fatal(err)
		}
		w.Hooks = append(w.Hooks, hook)
	}
	return w
}

// WALBench is a PostgreSQL store of its own for a WAL benchmark: an
// account with webhooks of license.created, and a reader of the server's
// WAL position.
type WALBench struct {
	b     *testing.B
	St    *store.Store
	Acct  store.Account
	Hooks []store.Webhook
	Raw   *sql.DB // a plain connection, for the WAL position
}

// LSN is the server's WAL insert position, in bytes.
func (w *WALBench) LSN() int64 {
	var n int64
	if err := w.Raw.QueryRow(`SELECT CAST(pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS BIGINT)`).Scan(&n); err != nil {
		w.b.Fatalf("read the WAL position: %v", err)
	}
	return n
}

// Handoffs stands for the dispatcher behind the store's Handoff seam: it
// grants every reservation (or none, refusing) and keeps what it was handed
// and given back, so that the store's half of handing over can be checked
// row by row. The real dispatcher's half is run end to end in package
// server (TestFiredLogsAreHandedToTheirProcess).
type Handoffs struct {
	mu        sync.Mutex
	Refuse    bool // grant no reservation
	reserved  int
	Taken     []store.Claim // handed over
	Abandoned []store.Claim // given back
	Maybe     bool          // some given back maybe committed
}

func (h *Handoffs) Reserve(accountID, webhookID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Refuse {
		return false
	}
	h.reserved++
	return true
}

func (h *Handoffs) Take(claims []store.Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Taken = append(h.Taken, claims...)
}

func (h *Handoffs) Abandon(claims []store.Claim, maybeCommitted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Abandoned = append(h.Abandoned, claims...)
	h.Maybe = h.Maybe || maybeCommitted
}

func (h *Handoffs) LeaseUntil(now time.Time) time.Time { return now.Add(time.Minute) }

// Open reports the reservations neither taken nor abandoned.
func (h *Handoffs) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reserved - len(h.Taken) - len(h.Abandoned)
}
