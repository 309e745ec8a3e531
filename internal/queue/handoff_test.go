package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// A firing leases what the process's dispatcher reserves
// (which logs that is, is the dispatcher's rule: delivery's tests): the
// queue row is leased in the firing's statement, the claim handed over
// carries what the attempt needs, no claim takes it while its lease runs
// and one takes it over once it ends, and it is recorded under its lease
// like a claimed log. A firing whose logs were all handed over wakes no
// dispatcher. A refused reservation leaves the log to the claims; a rolled
// back firing hands nothing over. The same on both engines.
func TestFiringLeasesWhatTheDispatcherReserves(t *testing.T) {
	testdb.ForEachStore(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		key := make([]byte, 32)
		st, err := store.Open(ctx, dbURL, store.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		acct, hook := storetest.AccountWithWebhook(t, st)
		db := testdb.OpenDB(t, dbURL)
		// fire fires one event and reports whether its commit woke the
		// dispatcher.
		fire := func() (id string, woke bool) {
			t.Helper()
			wait := st.Wait()
			if err := st.InTx(ctx, func(tx *store.Tx) error {
				var err error
				id, err = tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-wait:
				woke = true
			default:
			}
			return id, woke
		}
		// leased says whether the queue row of the event's one log is leased.
		leased := func(eventID string) bool {
			t.Helper()
			return db.Int(`SELECT COUNT(*) FROM delivery_queue q JOIN webhook_event_logs l ON l.id = q.log_id
WHERE l.event_id = ? AND q.lease IS NOT NULL AND q.lease_until IS NOT NULL AND q.claimed_at IS NOT NULL`, eventID) == 1
		}
		h := &storetest.Handoffs{}
		st.SetHandoff(h)

		first, woke := fire()
		if len(h.Taken) != 1 || !leased(first) || h.Open() != 0 || woke {
			t.Fatalf("first firing: taken %d, leased %v, open %d, woke %v; want its log handed over and no wake-up", len(h.Taken), leased(first), h.Open(), woke)
		}
		c := h.Taken[0]
		if c.WebhookID != hook.ID || c.AccountID != acct.ID || c.Event != string(event.LicenseCreated) || c.URL != hook.URL ||
			c.Token != "whsec_review_token_0123456789abcd" || len(c.Body) == 0 || !c.Enabled || c.Lease == "" || c.AttemptCount != 0 {
			t.Fatalf("handed claim %+v lacks what its attempt needs", c)
		}
		// A claim does not take a log handed over while its lease runs.
		now := time.Now()
		if got, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10}); err != nil || len(got) != 0 {
			t.Fatalf("claim took %d logs (%v); want none: the only one is handed over", len(got), err)
		}
		// Once it ends (the process died), a claim takes it over, and reads
		// the log as it was handed over.
		loaded := takeOver(t, st, c)
		if loaded.LogID != c.LogID || string(loaded.Body) != string(c.Body) || loaded.Token != c.Token || loaded.EventID != c.EventID || loaded.URL != c.URL {
			t.Fatalf("handed %+v, but the log reads as %+v", c, loaded)
		}

		// Refused: the log waits in the queue, unleased, and the commit
		// wakes the claims.
		h.Refuse = true
		waiting, woke := fire()
		h.Refuse = false
		if leased(waiting) || !woke {
			t.Fatalf("refused reservation: leased %v, woke %v; want the log waiting and the dispatcher woken", leased(waiting), woke)
		}
		next, _ := fire()
		if !leased(next) || len(h.Taken) != 2 {
			t.Fatalf("granted again: leased %v, taken %d; want it handed over", leased(next), len(h.Taken))
		}

		// Rolled back: nothing handed over, its reservation given back.
		boom := errors.New("boom")
		before := len(h.Abandoned)
		err = st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "gone"}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || len(h.Taken) != 2 || len(h.Abandoned) != before+1 || h.Maybe || h.Open() != 0 {
			t.Fatalf("rolled back (%v): taken %d, abandoned %d (was %d), maybe %v, open %d; want its one reservation given back",
				err, len(h.Taken), len(h.Abandoned), before, h.Maybe, h.Open())
		}

		// A handed-over log is recorded under its lease like a claimed one.
		code, at := 200, time.Now()
		handed := h.Taken[1]
		if _, err := queue.New(st).Complete(ctx, []store.Outcome{{LogID: handed.LogID, WebhookID: handed.WebhookID, Lease: handed.Lease,
			Trigger: store.TriggerAutomatic, Result: store.Delivered,
			Attempt: &store.AttemptRecord{SentAt: at, ReceivedAt: &at, StatusCode: &code}}}, 50); err != nil {
			t.Fatal(err)
		}
		var status string
		if err := db.SQL().QueryRow(`SELECT status FROM webhook_event_logs WHERE id = $1`, handed.LogID).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != string(store.Succeeded) || db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE log_id = ?`, handed.LogID) != 0 {
			t.Fatalf("handed log recorded as %q, queue rows %d; want succeeded and out of the queue", status,
				db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE log_id = ?`, handed.LogID))
		}
	})
}

// takeOver claims c's log after its lease ended, as a claim of another
// process would once c's process died, and returns what the claim read.
func takeOver(t *testing.T, st *store.Store, c store.Claim) store.Claim {
	t.Helper()
	later := time.Now().Add(2 * time.Minute) // past handoffs.LeaseUntil
	got, err := queue.New(st).Claim(context.Background(), store.ClaimParams{Now: later, LeaseUntil: later.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got, func(g store.Claim) bool { return g.LogID == c.LogID })
	// SQLite does not tell a take-over: one process serves its file, and
	// the leases of one that died are released when the next starts.
	if i < 0 || got[i].TakenOver != (st.Engine() == "postgres") {
		t.Fatalf("a claim after the lease took %+v; want log %s, taken over", got, c.LogID)
	}
	return got[i]
}
