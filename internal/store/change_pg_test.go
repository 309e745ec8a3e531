package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// On PostgreSQL a change and its event are one statement outside a
// transaction block (decision 0108): the dispatcher is handed the first
// attempts only of what the statement wrote, and gets back the
// reservations of a change not made or refused (which committed nothing);
// a webhook deleted between the read of the subscribed webhooks and the
// statement fails the statement on its log's foreign key, and the change
// is made again without it.
func TestAChangeHandsOverOnlyWhatItWrote(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	st := storetest.OpenPostgres(t, url, nil)
	acct, hook := storetest.AccountWithWebhook(t, st)
	db := testdb.OpenDB(t, url)
	h := &storetest.Handoffs{}
	st.SetHandoff(h)
	insert := func(id string, name any) store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1, 1 WHERE true
ON CONFLICT (id) DO NOTHING RETURNING id`, Args: []any{id, acct.ID, name}}
	}
	fired := store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]any{"id": "lic"}}
	leased := func() int {
		return db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL AND lease_until IS NOT NULL AND claimed_at IS NOT NULL`)
	}

	product := store.NewID()
	if made, err := st.ChangeAndFire(ctx, insert(product, "p"), fired); err != nil || !made {
		t.Fatalf("change: made %v, %v", made, err)
	}
	if len(h.Taken) != 1 || h.Taken[0].WebhookID != hook.ID || leased() != 1 || h.Open() != 0 {
		t.Fatalf("made: taken %d, leased %d, open %d; want its one log handed over and leased", len(h.Taken), leased(), h.Open())
	}

	// Not made, then refused: each reservation given back, nothing written.
	if made, err := st.ChangeAndFire(ctx, insert(product, "p"), fired); err != nil || made {
		t.Fatalf("repeated change: made %v, %v; want not made", made, err)
	}
	if made, err := st.ChangeAndFire(ctx, insert(store.NewID(), nil), fired); err == nil || made {
		t.Fatalf("failing change: made %v, %v; want an error", made, err)
	}
	if len(h.Taken) != 1 || len(h.Abandoned) != 2 || h.Maybe || h.Open() != 0 {
		t.Fatalf("taken %d, abandoned %d, maybe %v, open %d; want two reservations given back, neither maybe committed",
			len(h.Taken), len(h.Abandoned), h.Maybe, h.Open())
	}
	if n := db.Int(`SELECT COUNT(*) FROM events`); n != 1 {
		t.Fatalf("%d events; want the first change's alone", n)
	}

	// The webhook "doomed" is deleted, and the deletion committed, after
	// the webhooks were read and before the statement inserts its logs:
	// the statement waits, inside the change, on a lock the test holds.
	doomed, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "doomed", URL: "https://example.com/doomed",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_doomed_token_0123456789ab"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(4242);
  RETURN NEW;
END $$`,
		`CREATE TRIGGER hold BEFORE INSERT ON products FOR EACH ROW EXECUTE FUNCTION hold()`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := db.SQL().Conn(ctx) // the test's one connection, until it unlocks
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		made bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		made, err := st.ChangeAndFire(ctx, insert(store.NewID(), "q"), fired)
		done <- result{made, err}
	}()
	for waiting := 0; waiting == 0; time.Sleep(10 * time.Millisecond) {
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteWebhook(ctx, acct.ID, doomed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock(4242)`); err != nil {
		t.Fatal(err)
	}
	holder.Close()
	if r := <-done; r.err != nil || !r.made {
		t.Fatalf("change racing a webhook's deletion: made %v, %v; want made without it", r.made, r.err)
	}
	if n := db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ?`, doomed.ID); n != 0 {
		t.Fatalf("%d logs of the deleted webhook", n)
	}
	if len(h.Taken) != 2 || h.Taken[1].WebhookID != hook.ID || h.Open() != 0 {
		t.Fatalf("taken %d, open %d; want the remaining webhook's log handed over, the deleted one's given back", len(h.Taken), h.Open())
	}
}

// Webhooks that change between every read and its statement cannot fail a
// change (decision 0109): the first try uses the set kept from the last
// change and the second a fresh read, and each finds the account's
// webhooks_version moved and writes nothing; the third reads afresh and
// checks no version, and its event gets its logs from that read.
func TestAChangeIsMadeThoughItsWebhooksChangeAtEveryTry(t *testing.T) {
	t.Parallel()
	url, st, acct, hook, db := pgWithWebhook(t)
	ctx := context.Background()
	other := storetest.OpenPostgres(t, url, nil) // another process
	product := func() store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE true RETURNING id`, Args: []any{store.NewID(), acct.ID}}
	}
	fired := store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]any{"id": "lic"}}
	if made, err := st.ChangeAndFire(ctx, product(), fired); err != nil || !made {
		t.Fatalf("first change: made %v, %v", made, err)
	}

	// Before every try's statement the other process flips the webhook
	// between enabled and disabled: the try before the third sees it
	// disabled, the third's read enabled.
	enabled, tries := true, 0
	store.SetBeforeChange(st, func() {
		tries++
		enabled = !enabled
		if _, err := other.UpdateWebhook(ctx, acct.ID, hook.ID, store.WebhookPatch{Enabled: &enabled}); err != nil {
			t.Error(err)
		}
	})
	made, err := st.ChangeAndFire(ctx, product(), fired)
	store.SetBeforeChange(st, nil)
	if err != nil || !made {
		t.Fatalf("a change whose webhooks changed before each of its statements: made %v, %v; want made at the third try", made, err)
	}
	if tries != 3 {
		t.Errorf("%d tries; want 3", tries)
	}
	if n := db.Int(`SELECT COUNT(*) FROM products WHERE account_id = ?`, acct.ID); n != 2 {
		t.Errorf("%d products; want 2, each change made once", n)
	}
	if n := db.Int(`SELECT COUNT(*) FROM events WHERE kind = ?`, string(event.LicenseCreated)); n != 2 {
		t.Errorf("%d events; want 2", n)
	}
	var statuses []string
	rows, err := db.SQL().QueryContext(ctx, `SELECT status FROM webhook_event_logs WHERE webhook_id = $1 ORDER BY id`, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, s)
	}
	if len(statuses) != 2 || statuses[1] != string(store.Queued) {
		t.Errorf("the webhook's logs: %v; want two, the second queued as the third try's read found it enabled", statuses)
	}
}

// batchedProduct is a product's creation as a change that may share its
// statement (store.ChangeBatch): alone by Change.SQL, over a set by
// Batch.SQL.
func batchedProduct(accountID, id string) store.Change {
	return store.Change{
		SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE true ON CONFLICT (id) DO NOTHING RETURNING id`,
		Args: []any{id, accountID},
		Batch: &store.ChangeBatch{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT r.id, r.account_id, 'p', 1, 1 FROM changes r ORDER BY r.herald_item ON CONFLICT (id) DO NOTHING RETURNING id`,
			Columns: `id TEXT, account_id TEXT`, Row: map[string]any{"id": id, "account_id": accountID}, Key: id},
	}
}

// pgWithWebhook opens a PostgreSQL store of the test's own (two of the
// server's connections its share) with an account and its webhook, and a
// handle on its database to look in.
func pgWithWebhook(t *testing.T) (url string, st *store.Store, acct store.Account, hook store.Webhook, db *testdb.DB) {
	t.Helper()
	testdb.PostgresHandles(t, 2)
	url = testdb.PostgresURL(t)
	st = storetest.OpenPostgres(t, url, nil)
	acct, hook = storetest.AccountWithWebhook(t, st)
	return url, st, acct, hook, testdb.OpenDB(t, url)
}

// fiveBehindOne starts the change first, whose statement holdBatches holds
// (held, release), then five more, which wait for the next statement, and
// lets the first go.
func fiveBehindOne(t *testing.T, st *store.Store, held, release chan struct{}, change func(context.Context, string), first string) {
	t.Helper()
	ctx := context.Background()
	go change(ctx, first)
	<-held
	for range 5 {
		go change(ctx, store.NewID())
	}
	storetest.WaitForBatched(t, st, 5)
	close(release)
}

// batchedChanges returns change, which makes a product of the account
// with id (batchedProduct) and fires its event, sending its result to
// results.
func batchedChanges(st *store.Store, accountID string) (change func(ctx context.Context, id string), results chan batchedResult) {
	results = make(chan batchedResult, 16)
	change = func(ctx context.Context, id string) {
		made, err := st.ChangeAndFire(ctx, batchedProduct(accountID, id),
			store.Firing{AccountID: accountID, Kind: event.LicenseCreated, Data: map[string]any{"product": id}})
		results <- batchedResult{id, made, err}
	}
	return change, results
}

type batchedResult struct {
	id   string
	made bool
	err  error
}

// Changes that wait while a shared statement runs are made together by
// the next (decision 0112), each as it would be alone: a change under an
// API token revoked since it was kept is refused, a change with the key of
// one waiting waits for the statement after and is not made there, and
// every change made has its one event and its log.
func TestChangesWaitingShareOneStatement(t *testing.T) {
	t.Parallel()
	_, st, acct, hook, db := pgWithWebhook(t)
	ctx := context.Background()
	tok, err := st.CreateAPIToken(ctx, acct.ID, store.NewAPIToken{Name: "kept", Scope: store.ScopeWrite, Hash: "hash-batched"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Authenticate(ctx, "hash-batched"); err != nil {
		t.Fatal(err)
	}
	_, _, revoked, ok := st.KeptToken("hash-batched")
	if !ok {
		t.Fatal("the token read is not kept")
	}
	if _, err := db.SQL().ExecContext(ctx, `DELETE FROM api_tokens WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err) // as another process revokes it
	}

	change, results := batchedChanges(st, acct.ID)
	held, release := storetest.HoldBatches(t, st, nil)
	first := store.NewID()
	go change(ctx, first)
	<-held
	var ids []string
	for range 6 {
		ids = append(ids, store.NewID())
	}
	for _, id := range ids {
		go change(ctx, id)
	}
	storetest.WaitForBatched(t, st, 6)
	go change(ctx, ids[2])                                       // the key of a change waiting: it waits for the statement after
	go change(store.WithTokenCheck(ctx, revoked), store.NewID()) // refused
	storetest.WaitForBatched(t, st, 8)
	close(release)

	made := map[string]int{}
	refused := 0
	for range 9 {
		r := <-results
		switch {
		case errors.Is(r.err, store.ErrAPITokenRefused):
			refused++
		case r.err != nil:
			t.Errorf("change %s: %v", r.id, r.err)
		case r.made:
			made[r.id]++
		}
	}
	if ran, _ := store.ChangeBatches(st); ran != 3 {
		t.Errorf("%d shared statements; want 3: the held one, the seven that waited, the one whose key was among them", ran)
	}
	if refused != 1 {
		t.Errorf("%d changes refused; want the revoked token's", refused)
	}
	for _, id := range append([]string{first}, ids...) {
		if made[id] != 1 {
			t.Errorf("product %s made %d times; want once", id, made[id])
		}
	}
	if n := db.Int(`SELECT COUNT(*) FROM products WHERE account_id = ?`, acct.ID); n != 7 {
		t.Errorf("%d products; want 7", n)
	}
	for _, id := range append([]string{first}, ids...) {
		if n := db.Int(`SELECT COUNT(*) FROM events WHERE kind = ? AND convert_from(body, 'UTF8') LIKE ?`,
			string(event.LicenseCreated), "%"+id+"%"); n != 1 {
			t.Errorf("product %s: %d events; want 1", id, n)
		}
	}
	if n := db.Int(`SELECT COUNT(*) FROM webhook_event_logs l JOIN delivery_queue q ON q.log_id = l.id
WHERE l.webhook_id = ? AND l.status = 'queued'`, hook.ID); n != 7 {
		t.Errorf("%d logs queued; want one for each of the 7 events", n)
	}
}

// A shared statement that fails writes nothing, and each of its changes is
// made again by itself, reading what failed it: here the account's webhook
// disabled after the statement's changes read it, which fails the statement
// on the webhooks' version (decision 0109); each change alone then reads
// the webhook disabled and cancels its log.
func TestASharedStatementThatFailsMakesEachChangeAlone(t *testing.T) {
	t.Parallel()
	url, st, acct, hook, db := pgWithWebhook(t)
	ctx := context.Background()
	other := storetest.OpenPostgres(t, url, nil) // another process

	change, results := batchedChanges(st, acct.ID)
	off := false
	held, release := storetest.HoldBatches(t, st, func(n int) {
		if n == 2 { // the second shared statement, its changes prepared
			if _, err := other.UpdateWebhook(ctx, acct.ID, hook.ID, store.WebhookPatch{Enabled: &off}); err != nil {
				t.Error(err)
			}
		}
	})
	fiveBehindOne(t, st, held, release, change, store.NewID())
	for range 6 {
		if r := <-results; r.err != nil || !r.made {
			t.Errorf("change %s: made %v, %v; want made", r.id, r.made, r.err)
		}
	}
	if ran, _ := store.ChangeBatches(st); ran != 2 {
		t.Errorf("%d shared statements; want 2", ran)
	}
	if n := db.Int(`SELECT COUNT(*) FROM products WHERE account_id = ?`, acct.ID); n != 6 {
		t.Errorf("%d products; want 6", n)
	}
	if n := db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ? AND status = 'queued'`, hook.ID); n != 1 {
		t.Errorf("%d logs queued; want the first change's alone", n)
	}
	if n := db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ? AND status = 'cancelled' AND retry_reason = ?`,
		hook.ID, store.ReasonDisabled); n != 5 {
		t.Errorf("%d logs cancelled as disabled; want the five changes made alone after the webhook was disabled", n)
	}
}

// A panic in a shared statement's round (none is expected) answers every
// change the round took with an error instead of leaving its caller
// waiting, gives the dispatcher back the room its firings reserved (their
// logs released, in case it committed), and the round's place is not
// lost: with one statement at once, a change made afterwards runs.
func TestAPanicInASharedStatementAnswersItsChanges(t *testing.T) {
	t.Parallel()
	_, st, acct, _, db := pgWithWebhook(t)
	ctx := context.Background()
	h := &endingHandoff{}
	st.SetHandoff(h)

	change, results := batchedChanges(st, acct.ID)
	result := func() batchedResult {
		t.Helper()
		select {
		case r := <-results:
			return r
		case <-time.After(time.Minute):
			t.Fatal("a change was not answered")
			return batchedResult{}
		}
	}
	held, release := storetest.HoldBatches(t, st, func(n int) {
		if n == 2 { // the second shared statement, its changes prepared
			panic("the shared statement's round panics")
		}
	})
	first := store.NewID()
	fiveBehindOne(t, st, held, release, change, first)
	for range 6 {
		r := result()
		switch {
		case r.id == first && (r.err != nil || !r.made):
			t.Errorf("the first change: made %v, %v; want made", r.made, r.err)
		case r.id != first && r.err == nil:
			t.Errorf("change %s in the panicking round: made %v; want an error", r.id, r.made)
		}
	}
	last := store.NewID()
	go change(ctx, last)
	if r := result(); r.err != nil || !r.made {
		t.Errorf("a change after the panic: made %v, %v; want made", r.made, r.err)
	}
	if n := db.Int(`SELECT COUNT(*) FROM products WHERE account_id = ?`, acct.ID); n != 2 {
		t.Errorf("%d products; want the first change's and the last's", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reserved != 7 || h.taken != 2 || h.abandoned != 5 || h.maybeCommitted != 5 {
		t.Errorf("%d reservations, %d taken, %d given back (%d maybe committed); want 7: the two made taken, "+
			"the panicking round's five given back as maybe committed", h.reserved, h.taken, h.abandoned, h.maybeCommitted)
	}
}

// endingHandoff grants every reservation and counts how they end.
type endingHandoff struct {
	mu                                         sync.Mutex
	reserved, taken, abandoned, maybeCommitted int
}

func (h *endingHandoff) Reserve(accountID, webhookID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reserved++
	return true
}

func (h *endingHandoff) Take(claims []store.Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taken += len(claims)
}

func (h *endingHandoff) Abandon(claims []store.Claim, maybeCommitted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.abandoned += len(claims)
	if maybeCommitted {
		h.maybeCommitted += len(claims)
	}
}

func (h *endingHandoff) LeaseUntil(now time.Time) time.Time { return now.Add(time.Minute) }

// A set of webhooks kept from an earlier firing (decision 0109) is never
// used once a column the firing reads has changed: here the retry policy
// a handed-over claim carries, and the ordering that keeps an ordered
// webhook's events from being handed over past an earlier one (migration
// 0146), each changed by another process between two changes.
func TestAKeptWebhookSetSeesEveryColumnAHandOverReads(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	st := storetest.OpenPostgres(t, url, nil)
	other := storetest.OpenPostgres(t, url, nil)
	acct, hook := storetest.AccountWithWebhook(t, st)
	h := &storetest.Handoffs{}
	st.SetHandoff(h)
	fire := func() {
		t.Helper()
		change := store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE true RETURNING id`, Args: []any{store.NewID(), acct.ID}}
		if made, err := st.ChangeAndFire(ctx, change, store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]any{"id": "lic"}}); err != nil || !made {
			t.Fatalf("change: made %v, %v", made, err)
		}
	}
	patch := func(p store.WebhookPatch) {
		t.Helper()
		if _, err := other.UpdateWebhook(ctx, acct.ID, hook.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	fire()
	fire() // from the kept set
	if len(h.Taken) != 2 || h.Taken[1].RetryPolicy != nil {
		t.Fatalf("handed over %d; want both, with the operator's retry policy", len(h.Taken))
	}
	policy := &store.RetryPolicy{MaxAttempts: 3, Backoff: store.BackoffFixed, IntervalSeconds: 90}
	patch(store.WebhookPatch{RetryPolicy: &policy})
	fire()
	if len(h.Taken) != 3 || h.Taken[2].RetryPolicy == nil || h.Taken[2].RetryPolicy.MaxAttempts != 3 {
		t.Fatalf("after the retry policy changed: handed over %d, the last with policy %+v; want the new policy", len(h.Taken), h.Taken[len(h.Taken)-1].RetryPolicy)
	}
	ordered := store.OrderingLicense
	patch(store.WebhookPatch{Ordering: &ordered})
	fire()
	if len(h.Taken) != 3 {
		t.Fatalf("after the webhook was ordered: %d handed over; want none more (an ordered webhook's logs wait for their claim, in order)", len(h.Taken)-3)
	}
}

// The trigger that moves an account's webhooks_version watches every
// column a firing reads (but the id, which no update changes): a column
// added to the firing and forgotten there would let a process fire from a
// set it kept that no longer holds.
func TestTheWebhooksVersionWatchesEveryColumnAFiringReads(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	storetest.OpenPostgres(t, url, nil)
	db := testdb.OpenDB(t, url)
	var def string
	if err := db.SQL().QueryRow(`SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = 'webhooks_version_columns' AND tgrelid = 'webhooks'::regclass`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	for _, col := range strings.Split(store.FiringColumns, ", ") {
		if col == "id" {
			continue
		}
		if !strings.Contains(def, "old."+col+" IS DISTINCT FROM new."+col) {
			t.Errorf("the trigger does not watch webhooks.%s, which a firing reads", col)
		}
	}
}
