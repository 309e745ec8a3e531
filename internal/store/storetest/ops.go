package storetest

import (
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testEmailsClaimedOnce has several handles (processes) empty one outbox at
// once: each email is handed to exactly one; one left unsent goes again when
// its lease ends, and a failed one at once.
func testEmailsClaimedOnce(t *testing.T, b *Bundle) {
	const n = 12
	for i := range n {
		b.Webhook(t, string(rune('a'+i)))
	}
	b.Fire(t, b.St, 1)
	var outs []store.Outcome
	for _, c := range b.Claim(t, b.St, 0, time.Minute, 100, 100) {
		outs = append(outs, Outcome(c, store.Exhausted, 500, b.Clock.Now()))
	}
	if sp := b.Complete(t, b.St, 1, outs...); len(sp) != n {
		t.Fatalf("%d suspensions; want %d", len(sp), n)
	}
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var mu sync.Mutex
	got := map[string]int{}
	Parallel(6, func(i int) {
		for {
			es, err := handles[i%len(handles)].ClaimEmails(b.Ctx, 2, time.Minute)
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
		if err := b.St.MarkEmail(b.Ctx, id, "subject", "body", ""); err != nil {
			t.Fatal(err)
		}
	}
	if es, _ := b.St.ClaimEmails(b.Ctx, 100, time.Minute); len(es) != 0 {
		t.Fatalf("%d emails claimed again within their lease", len(es))
	}
	b.Clock.Add(2 * time.Minute)
	again, err := b.St.ClaimEmails(b.Ctx, 100, time.Minute)
	if err != nil || len(again) != n/2 {
		t.Fatalf("after the lease: %d emails, %v; want the %d unsent", len(again), err, n/2)
	}
	// A failed send backs that email off; the others are not held up.
	for _, e := range again {
		if _, err := b.St.FailEmail(b.Ctx, e.ID, "smtp down", b.Clock.Now().Add(time.Duration(len(e.ID)%3+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	n2, err := b.St.FailEmail(b.Ctx, again[0].ID, "smtp down", b.Clock.Now().Add(10*time.Minute))
	if err != nil || n2 != 2 {
		t.Fatalf("second failure of one email: attempts %d, %v; want 2", n2, err)
	}
	if es, _ := b.St.ClaimEmails(b.Ctx, 100, time.Minute); len(es) != 0 {
		t.Fatalf("%d emails claimed before their retry time", len(es))
	}
	b.Clock.Add(5 * time.Minute)
	es, _ := b.St.ClaimEmails(b.Ctx, 100, time.Minute)
	if len(es) != n/2-1 {
		t.Fatalf("after 5 minutes: %d emails claimable; want %d (all but the one backed off for 10)", len(es), n/2-1)
	}
	for _, e := range es {
		if e.ID == again[0].ID || e.Attempts != 1 {
			t.Errorf("claimed %s with %d attempts", e.ID, e.Attempts)
		}
	}
}

func testConcurrentOpens(t *testing.T, b *Bundle) {
	url := b.NewURL(t)
	const n = 5
	stores := make([]*store.Store, n)
	var created, refused atomic.Int32
	sqlite := strings.HasPrefix(url, "sqlite:")
	Parallel(n, func(i int) {
		st, err := store.Open(b.Ctx, url, store.Options{Key: b.Key})
		if sqlite && err != nil && strings.Contains(err.Error(), "another herald process") {
			refused.Add(1)
			return
		}
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			return
		}
		stores[i] = st
		_, ok, err := st.BootstrapIfEmpty(b.Ctx, store.Bootstrap{AccountName: "first", OwnerEmail: "owner@example.com",
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
	want, _ := b.St.SchemaVersion(b.Ctx)
	for _, st := range stores {
		if st == nil {
			continue
		}
		var accounts int
		if err := st.QueryRow(b.Ctx, `SELECT COUNT(*) FROM accounts`).Scan(&accounts); err != nil || accounts != 1 {
			t.Errorf("%d accounts (%v); want 1", accounts, err)
		}
		if v, err := st.SchemaVersion(b.Ctx); err != nil || v != want {
			t.Errorf("schema version %d (%v); want %d", v, err, want)
		}
	}
}

func testWrongKey(t *testing.T, b *Bundle) {
	other := make([]byte, 32)
	rand.Read(other)
	b.St.Close() // SQLite admits one process at a time
	st, err := store.Open(b.Ctx, b.url, store.Options{Key: other})
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
func testWake(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	ch := b.St.Wait()
	b.Fire(t, b.St, 1)
	select {
	case <-ch:
	default:
		t.Fatal("a commit that fired an event did not wake this handle's waiter")
	}
	if b.St.Engine() != "postgres" {
		return // one process per SQLite file: nothing else to wake
	}
	other := b.Open(t)
	elsewhere := b.openAt(t, b.NewURL(t))
	quiet(other)
	quiet(b.St)
	wOther, wHere := other.Wait(), b.St.Wait()
	start := time.Now()
	b.fireOn(t, elsewhere)
	select {
	case <-wOther:
		t.Fatal("an event in another database woke this one's processes")
	case <-time.After(500 * time.Millisecond):
	}
	b.Fire(t, b.St, 1)
	select {
	case <-wOther:
		t.Logf("another process woke %s after the commit", time.Since(start)-500*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("another process was not woken within 5s of a commit")
	}
	<-wHere
}

// testUpdateWakes: a webhook change that may free logs held from claims
// (its rate limit, enabling it, its ordering) wakes this handle's waiters
// at once and, on PostgreSQL, another process's; a change of its name
// frees nothing and wakes no one (told on SQLite, where nothing else
// wakes a handle: on PostgreSQL a listener wakes its store when it
// connects, which a busy machine may delay past any wait here).
func testUpdateWakes(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "w")
	other := b.Open(t)
	if b.St.Engine() == "sqlite" {
		name := "renamed"
		ch := b.St.Wait()
		if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Name: &name}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			t.Fatal("renaming a webhook woke the dispatcher's waiter")
		case <-time.After(300 * time.Millisecond):
		}
	}
	five, off, on, none := 5, false, true, 0
	for _, c := range []struct {
		what string
		p    store.WebhookPatch
	}{
		{"setting a rate limit", store.WebhookPatch{RateLimit: &five}},
		{"lifting its rate limit", store.WebhookPatch{RateLimit: &none}},
		{"disabling it", store.WebhookPatch{Enabled: &off}},
		{"enabling it", store.WebhookPatch{Enabled: &on}},
		{"ordering its events", store.WebhookPatch{Ordering: ptr(store.OrderingLicense)}},
	} {
		ch, chOther := b.St.Wait(), other.Wait()
		if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, c.p); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		select {
		case <-ch:
		default:
			t.Fatalf("%s did not wake this handle's waiter", c.what)
		}
		if other == b.St {
			continue // SQLite: one process
		}
		select {
		case <-chOther:
		case <-time.After(time.Minute):
			t.Fatalf("%s did not wake another process within a minute", c.what)
		}
	}
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
func (b *Bundle) openAt(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(b.Ctx, url, store.Options{Key: b.Key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fireOn fires one event in the database of st, in an account of its own.
func (b *Bundle) fireOn(t testing.TB, st *store.Store) {
	t.Helper()
	a, err := st.CreateAccount(b.Ctx, store.Bootstrap{AccountName: "x", OwnerEmail: "x@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWebhook(b.Ctx, a.ID, store.NewWebhook{Name: "x", URL: "https://example.com/x",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_x_0123456789"}); err != nil {
		t.Fatal(err)
	}
	if err := st.InTx(b.Ctx, func(tx *store.Tx) error {
		_, err := tx.Fire(b.Ctx, a.ID, event.LicenseCreated, map[string]any{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// gauges reads the store's gauges.
func (b *Bundle) gauges(t testing.TB) store.Gauges {
	t.Helper()
	g, err := b.St.Gauges(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testGauges reads what an operator watches: the backlog by status, how
// long the oldest due log has waited, webhooks by status, and the outbox.
func testGauges(t *testing.T, b *Bundle) {
	if g := b.gauges(t); g.Due != 0 || g.OldestDue != 0 || len(g.Webhooks) != 0 || g.EmailsUnsent != 0 || g.Backlog[store.Queued] != 0 {
		t.Fatalf("an empty database: %+v", g)
	}
	w1 := b.Webhook(t, "one")
	b.Webhook(t, "two")
	b.Fire(t, b.St, 3) // 3 logs for each webhook
	b.Clock.Add(10 * time.Second)
	g := b.gauges(t)
	if g.Backlog[store.Queued] != 6 || g.Backlog[store.Pending] != 0 || g.Due != 6 || g.OldestDue != 10*time.Second {
		t.Errorf("6 queued logs due for 10s: backlog %v, due %d, oldest %s", g.Backlog, g.Due, g.OldestDue)
	}
	if len(g.Webhooks) != 1 || g.Webhooks[0] != (store.WebhookCount{Status: store.Healthy, Enabled: true, N: 2}) {
		t.Errorf("webhooks %+v; want 2 Healthy and enabled", g.Webhooks)
	}

	// Two claimed: in flight, not due. Then one webhook fails until it is
	// suspended, which queues an email.
	cs := b.Claim(t, b.St, 0, time.Minute, 2, 1)
	if g := b.gauges(t); g.Backlog[store.Pending] != 2 || g.Backlog[store.Queued] != 4 || g.Due != 4 {
		t.Errorf("after claiming 2: backlog %v, due %d", g.Backlog, g.Due)
	}
	var outs []store.Outcome
	for _, c := range cs {
		if c.WebhookID == w1.ID {
			outs = append(outs, Outcome(c, store.Exhausted, 500, b.Clock.Now()))
		}
	}
	if sp := b.Complete(t, b.St, 1, outs...); len(sp) != 1 {
		t.Fatalf("%d suspensions; want webhook one's", len(sp))
	}
	b.Clock.Add(time.Minute)
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
func testWriterStats(t *testing.T, b *Bundle) {
	before := b.gauges(t)
	if b.St.Engine() != "sqlite" {
		if before.Writer != nil {
			t.Errorf("writer figures on %s: %+v", b.St.Engine(), *before.Writer)
		}
		return
	}
	if before.Writer == nil {
		t.Fatal("no writer figures on SQLite")
	}
	b.Webhook(t, "one")
	before = b.gauges(t)
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
				_, err := tx.Fire(b.Ctx, b.Account.ID, event.LicenseCreated, map[string]any{})
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
