package storetest

import (
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
)

// testEmailsClaimedOnce has several handles (processes) empty one outbox at
// once: each email is handed to exactly one; one left unsent goes again when
// its lease ends, and a failed one at once.
func testEmailsClaimedOnce(t *testing.T, b *bundle) {
	const n = 12
	for i := range n {
		b.webhook(t, string(rune('a'+i)))
	}
	b.fire(t, b.st, 1)
	var outs []store.Outcome
	for _, c := range b.claim(t, b.st, 0, time.Minute, 100, 100) {
		outs = append(outs, outcome(c, store.Exhausted, 500, b.clock.Now()))
	}
	if sp := b.complete(t, b.st, 1, outs...); len(sp) != n {
		t.Fatalf("%d suspensions; want %d", len(sp), n)
	}
	handles := []*store.Store{b.st, b.open(t), b.open(t)}
	var mu sync.Mutex
	got := map[string]int{}
	parallel(6, func(i int) {
		for {
			es, err := handles[i%len(handles)].ClaimEmails(b.ctx, 2, time.Minute)
			if err != nil {
				t.Errorf("claim emails: %v", err)
				return
			}
			if len(es) == 0 {
				return
			}
			mu.Lock()
			for _, e := range es {
				got[e.ID]++
			}
			mu.Unlock()
		}
	})
	if len(got) != n {
		t.Fatalf("%d emails claimed; want %d", len(got), n)
	}
	var ids []string
	for id, k := range got {
		if k != 1 {
			t.Errorf("email %s claimed %d times", id, k)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[:n/2] {
		if err := b.st.MarkEmail(b.ctx, id, "subject", "body", ""); err != nil {
			t.Fatal(err)
		}
	}
	if es, _ := b.st.ClaimEmails(b.ctx, 100, time.Minute); len(es) != 0 {
		t.Fatalf("%d emails claimed again within their lease", len(es))
	}
	b.clock.Add(2 * time.Minute)
	again, err := b.st.ClaimEmails(b.ctx, 100, time.Minute)
	if err != nil || len(again) != n/2 {
		t.Fatalf("after the lease: %d emails, %v; want the %d unsent", len(again), err, n/2)
	}
	// A failed send backs that email off; the others are not held up.
	for _, e := range again {
		if _, err := b.st.FailEmail(b.ctx, e.ID, "smtp down", b.clock.Now().Add(time.Duration(len(e.ID)%3+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	n2, err := b.st.FailEmail(b.ctx, again[0].ID, "smtp down", b.clock.Now().Add(10*time.Minute))
	if err != nil || n2 != 2 {
		t.Fatalf("second failure of one email: attempts %d, %v; want 2", n2, err)
	}
	if es, _ := b.st.ClaimEmails(b.ctx, 100, time.Minute); len(es) != 0 {
		t.Fatalf("%d emails claimed before their retry time", len(es))
	}
	b.clock.Add(5 * time.Minute)
	es, _ := b.st.ClaimEmails(b.ctx, 100, time.Minute)
	if len(es) != n/2-1 {
		t.Fatalf("after 5 minutes: %d emails claimable; want %d (all but the one backed off for 10)", len(es), n/2-1)
	}
	for _, e := range es {
		if e.ID == again[0].ID || e.Attempts != 1 {
			t.Errorf("claimed %s with %d attempts", e.ID, e.Attempts)
		}
	}
}

// testRetentionWalksEventsByID purges events without logs under the wall
// clock, where the walk goes by id and stops at the id of the retention's
// bound (decision 0099): events made 40 days ago go, in batches of 2 (the
// cursor carried over), one of 20 days ago stays, and so does one whose
// time says 40 days ago but whose id was made now, past the walk's end:
// the witness that the walk stops at the bound rather than reading every
// event after the cursor.
func testRetentionWalksEventsByID(t *testing.T, b *bundle) {
	st, err := store.Open(b.ctx, b.newURL(t), store.Options{Key: b.key}) // the wall clock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := st.CreateAccount(b.ctx, store.Bootstrap{AccountName: "w", OwnerEmail: "w@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-20*24*time.Hour)
	events := []struct {
		id string
		at time.Time
	}{
		{store.NewIDAt(old), old}, {store.NewIDAt(old.Add(time.Second)), old.Add(time.Second)},
		{store.NewIDAt(old.Add(2 * time.Second)), old.Add(2 * time.Second)},
		{store.NewIDAt(recent), recent}, {store.NewID(), old},
	}
	if err := st.InTx(b.ctx, func(tx *store.Tx) error {
		for _, e := range events {
			if _, err := tx.Exec(b.ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.deleted', '{}', ?)`,
				e.id, acct.ID, store.MS(e.at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	deleted, calls := 0, 0
	for cursor := (store.EventCursor{}); ; calls++ {
		n, next, done, err := st.PurgeEvents(b.ctx, now.Add(-30*24*time.Hour), cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		deleted += n
		if done || calls > 10 {
			break
		}
		cursor = next
	}
	if deleted != 3 {
		t.Errorf("purged %d events; want the 3 made 40 days ago", deleted)
	}
	for i, e := range events {
		var n int
		if err := st.QueryRow(b.ctx, `SELECT COUNT(*) FROM events WHERE id = ?`, e.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[i < 3]; n != want {
			t.Errorf("event %d (made %v, at %v): %d left; want %d", i, e.id, e.at.Format(time.DateOnly), n, want)
		}
	}
}

// testRetention fills logs of every status, lets 40 days pass, and purges
// with a 30-day retention in batches of 2: completed logs older than that go
// with their attempts and the events left without logs; queued, pending and
// retrying logs stay, however old, and so do their events.
func testRetention(t *testing.T, b *bundle) {
	ok, bad, off, slow, idle, busy := b.webhook(t, "ok"), b.webhook(t, "bad"), b.webhook(t, "off"), b.webhook(t, "slow"), b.webhook(t, "idle"), b.webhook(t, "busy")
	disabled := false
	if _, err := b.st.UpdateWebhook(b.ctx, b.account.ID, off.ID, store.WebhookPatch{Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	settle := func() {
		t.Helper()
		now := b.clock.Now()
		var outs []store.Outcome
		for _, c := range b.claim(t, b.st, 0, 100*24*time.Hour, 1000, 1000, idle.ID) {
			switch c.WebhookID {
			case ok.ID:
				outs = append(outs, outcome(c, store.Delivered, 200, now))
			case bad.ID:
				outs = append(outs, outcome(c, store.Exhausted, 500, now))
			case slow.ID:
				o := outcome(c, store.Retry, 503, now)
				o.NextAt = now.Add(1000 * time.Hour)
				outs = append(outs, o)
			case busy.ID: // left pending: its attempt is in flight
			}
		}
		b.complete(t, b.st, 1000, outs...)
	}
	old := b.fire(t, b.st, 5)
	settle()
	fireKind := func(kind event.Kind) {
		t.Helper()
		if err := b.st.InTx(b.ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(b.ctx, b.account.ID, kind, map[string]any{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	fireKind(event.LicenseDeleted) // no webhook subscribes: an event without logs
	b.clock.Add(40 * 24 * time.Hour)
	fireKind(event.LicenseDeleted)
	b.fire(t, b.st, 1)
	settle()

	active := `SELECT COUNT(*) FROM webhook_event_logs WHERE status IN ('queued', 'pending', 'retrying')`
	activeBefore := b.count(t, active)
	if activeBefore != 3*6 {
		t.Fatalf("%d active logs before; want 18", activeBefore)
	}
	logs, events, err := retention.Purge(b.ctx, b.st, retention.Config{Keep: 30 * 24 * time.Hour, Batch: 2, Pause: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The old events without logs: the license.deleted, and the
	// webhook.unhealthy of bad's first failure, which no webhook subscribes to.
	if logs != 3*5 || events != 2 {
		t.Errorf("purged %d logs and %d events; want 15 and 2", logs, events)
	}
	if n := b.count(t, active); n != activeBefore {
		t.Errorf("%d active logs after; want %d", n, activeBefore)
	}
	cutoff := store.MS(b.clock.Now().Add(-30 * 24 * time.Hour))
	if n := b.count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE completed_at < ?`, cutoff); n != 0 {
		t.Errorf("%d expired completed logs left", n)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE completed_at >= ?`, cutoff); n != 3 {
		t.Errorf("%d recent completed logs; want the 3 of the recent event", n)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM webhook_attempts a WHERE NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.id = a.log_id)`); n != 0 {
		t.Errorf("%d attempts of removed logs left", n)
	}
	for _, id := range old {
		if n := b.count(t, `SELECT COUNT(*) FROM events WHERE id = ?`, id); n != 1 {
			t.Errorf("event %s with active logs was removed", id)
		}
	}
	if n := b.count(t, `SELECT COUNT(*) FROM events`); n != 5+1+1 {
		t.Errorf("%d events left; want the 5 with active logs and the 2 recent", n)
	}
	if logs, events, err := retention.Purge(b.ctx, b.st, retention.Config{Keep: 30 * 24 * time.Hour}); logs != 0 || events != 0 || err != nil {
		t.Errorf("a second purge: %d logs, %d events, %v; want nothing", logs, events, err)
	}
}

// testConcurrentOpens starts several processes at once on an empty database:
// migrations run once, and one first account is created between them. On
// SQLite, which serves one process, exactly one open succeeds and the others
// are refused with the reason.
func testConcurrentOpens(t *testing.T, b *bundle) {
	url := b.newURL(t)
	const n = 5
	stores := make([]*store.Store, n)
	var created, refused atomic.Int32
	sqlite := strings.HasPrefix(url, "sqlite:")
	parallel(n, func(i int) {
		st, err := store.Open(b.ctx, url, store.Options{Key: b.key})
		if sqlite && err != nil && strings.Contains(err.Error(), "another herald process") {
			refused.Add(1)
			return
		}
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			return
		}
		stores[i] = st
		_, ok, err := st.BootstrapIfEmpty(b.ctx, store.Bootstrap{AccountName: "first", OwnerEmail: "owner@example.com",
			PasswordHash: "x", TokenHash: store.NewID()})
		if err != nil {
			t.Errorf("bootstrap %d: %v", i, err)
		}
		if ok {
			created.Add(1)
		}
	})
	for _, st := range stores {
		if st != nil {
			defer st.Close()
		}
	}
	if t.Failed() {
		return
	}
	if got := created.Load(); got != 1 {
		t.Errorf("%d processes created the first account; want 1", got)
	}
	if sqlite && refused.Load() != n-1 {
		t.Errorf("%d of %d other opens of one SQLite file were refused; want all", refused.Load(), n-1)
	}
	want, _ := b.st.SchemaVersion(b.ctx)
	for _, st := range stores {
		if st == nil {
			continue
		}
		var accounts int
		if err := st.QueryRow(b.ctx, `SELECT COUNT(*) FROM accounts`).Scan(&accounts); err != nil || accounts != 1 {
			t.Errorf("%d accounts (%v); want 1", accounts, err)
		}
		if v, err := st.SchemaVersion(b.ctx); err != nil || v != want {
			t.Errorf("schema version %d (%v); want %d", v, err, want)
		}
	}
}

func testWrongKey(t *testing.T, b *bundle) {
	other := make([]byte, 32)
	rand.Read(other)
	b.st.Close() // SQLite admits one process at a time
	st, err := store.Open(b.ctx, b.url, store.Options{Key: other})
	if err == nil {
		st.Close()
		t.Fatal("a database opened under another key")
	}
	if !strings.Contains(err.Error(), "secret key") {
		t.Errorf("refused for another reason: %v", err)
	}
}

// testWake: a commit that fires an event wakes this handle's waiters at
// once; on PostgreSQL it also wakes every other process on the database
// (LISTEN/NOTIFY), and none on another database.
func testWake(t *testing.T, b *bundle) {
	b.webhook(t, "w")
	ch := b.st.Wait()
	b.fire(t, b.st, 1)
	select {
	case <-ch:
	default:
		t.Fatal("a commit that fired an event did not wake this handle's waiter")
	}
	if b.st.Engine() != "postgres" {
		return // one process per SQLite file: nothing else to wake
	}
	other := b.open(t)
	elsewhere := b.openAt(t, b.newURL(t))
	quiet(other)
	quiet(b.st)
	wOther, wHere := other.Wait(), b.st.Wait()
	start := time.Now()
	b.fireOn(t, elsewhere)
	select {
	case <-wOther:
		t.Fatal("an event in another database woke this one's processes")
	case <-time.After(500 * time.Millisecond):
	}
	b.fire(t, b.st, 1)
	select {
	case <-wOther:
		t.Logf("another process woke %s after the commit", time.Since(start)-500*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("another process was not woken within 5s of a commit")
	}
	<-wHere
}

// quiet waits until st has not been woken for 300ms (a listener wakes its
// store once when it connects).
func quiet(st *store.Store) {
	for {
		select {
		case <-st.Wait():
		case <-time.After(300 * time.Millisecond):
			return
		}
	}
}

// openAt opens a store on another database, with an account and a webhook.
func (b *bundle) openAt(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(b.ctx, url, store.Options{Key: b.key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fireOn fires one event in the database of st, in an account of its own.
func (b *bundle) fireOn(t testing.TB, st *store.Store) {
	t.Helper()
	a, err := st.CreateAccount(b.ctx, store.Bootstrap{AccountName: "x", OwnerEmail: "x@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWebhook(b.ctx, a.ID, store.NewWebhook{Name: "x", URL: "https://example.com/x",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_x_0123456789"}); err != nil {
		t.Fatal(err)
	}
	if err := st.InTx(b.ctx, func(tx *store.Tx) error {
		_, err := tx.Fire(b.ctx, a.ID, event.LicenseCreated, map[string]any{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// gauges reads the store's gauges.
func (b *bundle) gauges(t testing.TB) store.Gauges {
	t.Helper()
	g, err := b.st.Gauges(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testGauges reads what an operator watches: the backlog by status, how
// long the oldest due log has waited, webhooks by status, and the outbox.
func testGauges(t *testing.T, b *bundle) {
	if g := b.gauges(t); g.Due != 0 || g.OldestDue != 0 || len(g.Webhooks) != 0 || g.EmailsUnsent != 0 || g.Backlog[store.Queued] != 0 {
		t.Fatalf("an empty database: %+v", g)
	}
	w1 := b.webhook(t, "one")
	b.webhook(t, "two")
	b.fire(t, b.st, 3) // 3 logs for each webhook
	b.clock.Add(10 * time.Second)
	g := b.gauges(t)
	if g.Backlog[store.Queued] != 6 || g.Backlog[store.Pending] != 0 || g.Due != 6 || g.OldestDue != 10*time.Second {
		t.Errorf("6 queued logs due for 10s: backlog %v, due %d, oldest %s", g.Backlog, g.Due, g.OldestDue)
	}
	if len(g.Webhooks) != 1 || g.Webhooks[0] != (store.WebhookCount{Status: store.Healthy, Enabled: true, N: 2}) {
		t.Errorf("webhooks %+v; want 2 Healthy and enabled", g.Webhooks)
	}

	// Two claimed: in flight, not due. Then one webhook fails until it is
	// suspended, which queues an email.
	cs := b.claim(t, b.st, 0, time.Minute, 2, 1)
	if g := b.gauges(t); g.Backlog[store.Pending] != 2 || g.Backlog[store.Queued] != 4 || g.Due != 4 {
		t.Errorf("after claiming 2: backlog %v, due %d", g.Backlog, g.Due)
	}
	var outs []store.Outcome
	for _, c := range cs {
		if c.WebhookID == w1.ID {
			outs = append(outs, outcome(c, store.Exhausted, 500, b.clock.Now()))
		}
	}
	if sp := b.complete(t, b.st, 1, outs...); len(sp) != 1 {
		t.Fatalf("%d suspensions; want webhook one's", len(sp))
	}
	b.clock.Add(time.Minute)
	g = b.gauges(t)
	want := []store.WebhookCount{{Status: store.Healthy, Enabled: true, N: 1}, {Status: store.Suspended, Enabled: true, N: 1}}
	if len(g.Webhooks) != 2 || g.Webhooks[0] != want[0] || g.Webhooks[1] != want[1] {
		t.Errorf("webhooks %+v; want %+v", g.Webhooks, want)
	}
	if g.EmailsUnsent != 1 || g.OldestEmail != time.Minute {
		t.Errorf("outbox: %d unsent, oldest %s; want the suspension email, a minute old", g.EmailsUnsent, g.OldestEmail)
	}
}

// testWriterStats reads what SQLite's one writer has done: the transactions
// concurrent callers ran, in as many commits or fewer (groups), and the
// time it spent on them. PostgreSQL has no one writer and says nothing.
func testWriterStats(t *testing.T, b *bundle) {
	before := b.gauges(t)
	if b.st.Engine() != "sqlite" {
		if before.Writer != nil {
			t.Errorf("writer figures on %s: %+v", b.st.Engine(), *before.Writer)
		}
		return
	}
	if before.Writer == nil {
		t.Fatal("no writer figures on SQLite")
	}
	b.webhook(t, "one")
	before = b.gauges(t)
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := b.st.InTx(b.ctx, func(tx *store.Tx) error {
				_, err := tx.Fire(b.ctx, b.account.ID, event.LicenseCreated, map[string]any{})
				return err
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	w0, w := *before.Writer, *b.gauges(t).Writer
	txs, commits := w.Transactions-w0.Transactions, w.Commits-w0.Commits
	// At least the firings: the store's own upkeep may write meanwhile.
	if txs < n || commits < 1 || commits > txs || w.Busy <= w0.Busy {
		t.Errorf("%d firings made %d transactions in %d commits, busy %s more", n, txs, commits, w.Busy-w0.Busy)
	}
}
