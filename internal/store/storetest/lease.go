package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// testLeasesRenewAndRelease: a process renews the leases it still holds, so
// that another process takes over only a lease that was not renewed (its
// process died); and a stopping process releases what it holds, due at once,
// without touching what another process holds.
func testLeasesRenewAndRelease(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 4)
	other := b.Open(t) // another process
	mine := b.Claim(t, b.St, 0, 5*time.Second, 10, 10)
	if len(mine) != 4 {
		t.Fatalf("claimed %d; want 4", len(mine))
	}
	held := func(cs ...store.Claim) []store.Held {
		var h []store.Held
		for _, c := range cs {
			h = append(h, store.Held{LogID: c.LogID, Lease: c.Lease})
		}
		return h
	}
	// Renewed before they end, three leases run an hour; the fourth is
	// left to end.
	n, err := b.Q.RenewLeases(b.Ctx, held(mine[:3]...), b.Clock.Now().Add(time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("renewed %d, %v; want 3", n, err)
	}
	taken := b.Claim(t, other, 6*time.Second, 5*time.Second, 10, 10)
	if len(taken) != 1 || taken[0].LogID != mine[3].LogID {
		t.Fatalf("after 6s another process took %d logs; want only the one whose lease was not renewed", len(taken))
	}
	// The lease taken over is another process's now: renewing it does nothing.
	if n, err := b.Q.RenewLeases(b.Ctx, held(mine[3]), b.Clock.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("renewed a lease taken over: %d, %v", n, err)
	}
	if b.Count(t, `SELECT COUNT(*) FROM delivery_queue WHERE log_id = ? AND lease_until = ?`,
		mine[3].LogID, b.Clock.Now().Add(11*time.Second).UnixMilli()) != 1 {
		t.Fatalf("the new holder's lease changed; want it to end when its own claim said")
	}
	if n, err := queue.New(other).RenewLeases(b.Ctx, held(taken...), b.Clock.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("the new holder renewed %d, %v; want 1", n, err)
	}

	// A retrying log released goes back to retrying; the others to queued.
	now := b.Clock.Now()
	b.Complete(t, b.St, 50, Outcome(mine[0], store.Retry, 503, now))
	again := b.Claim(t, b.St, time.Minute, 5*time.Minute, 10, 10)
	if len(again) != 1 || again[0].LogID != mine[0].LogID {
		t.Fatalf("claimed %d logs a minute later; want the retry", len(again))
	}
	n, err = b.Q.ReleaseHeld(b.Ctx, []string{mine[0].Lease, again[0].Lease, store.NewID()})
	if err != nil || n != 3 {
		t.Fatalf("released %d, %v; want the 3 logs still held", n, err)
	}
	want := map[string]store.LogStatus{mine[0].LogID: store.Retrying, mine[1].LogID: store.Queued, mine[2].LogID: store.Queued, mine[3].LogID: store.Pending}
	for id, status := range want {
		l := b.log(t, id)
		if l.Status != status {
			t.Errorf("log %s is %s after the release; want %s", id, l.Status, status)
		}
		if status != store.Pending && (l.NextAttemptAt == nil || !l.NextAttemptAt.Equal(b.Clock.Now())) {
			t.Errorf("released log %s due at %v; want now", id, l.NextAttemptAt)
		}
	}
	if got := b.Claim(t, other, 0, 5*time.Second, 10, 10); len(got) != 3 {
		t.Errorf("another process claimed %d logs at once after the release; want 3", len(got))
	}
}

// testRenewalWaitsForNoRowLock: a renewal passes over a held log whose row
// another transaction has locked (a recording of it, a release, a takeover),
// renewing the others without waiting; the next renewal renews it. A renewal
// that waited for such a row deadlocked with recordings that lock their rows
// in another order. SQLite has no row locks: one writer at a time.
func testRenewalWaitsForNoRowLock(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 3)
	cs := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(cs) != 3 {
		t.Fatalf("claimed %d; want 3", len(cs))
	}
	held := make([]store.Held, len(cs))
	for i, c := range cs {
		held[i] = store.Held{LogID: c.LogID, Lease: c.Lease}
	}
	until := b.Clock.Now().Add(time.Hour)
	renewed := func() int {
		t.Helper()
		return b.Count(t, `SELECT COUNT(*) FROM delivery_queue WHERE lease_until = ?`, until.UnixMilli())
	}
	if b.St.Engine() == "postgres" {
		locked, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- b.St.InTx(b.Ctx, func(tx *store.Tx) error {
				if _, err := tx.Exec(b.Ctx, `UPDATE delivery_queue SET due_at = due_at WHERE log_id = ?`, cs[0].LogID); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
		}()
		select {
		case <-locked:
		case err := <-done:
			t.Fatalf("lock a queue row: %v", err)
		}
		// Bounded only so that a renewal that waits fails the test rather
		// than hanging it: the lock is held until the renewal returns.
		ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
		n, err := b.Q.RenewLeases(ctx, held, until)
		cancel()
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err != nil || n != 2 {
			t.Fatalf("renewal beside a locked row: %d renewed, %v; want the 2 others, at once", n, err)
		}
		if got := renewed(); got != 2 {
			t.Fatalf("%d leases renewed; want 2", got)
		}
	}
	if n, err := b.Q.RenewLeases(b.Ctx, held, until); err != nil || n != 3 {
		t.Fatalf("renewal: %d, %v; want all 3", n, err)
	}
	if got := renewed(); got != 3 {
		t.Fatalf("%d leases renewed; want 3", got)
	}
}

// testNoTakeover: a claim made with NoTakeover (its process not sure that
// its writes reach the database, decision 0117) passes over a log whose
// lease ended, and takes every log never leased or released; the same
// claim without it takes the ended lease over.
func testNoTakeover(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 2)
	other := b.Open(t) // another process
	mine := b.Claim(t, b.St, 0, 5*time.Second, 1, 10)
	if len(mine) != 1 {
		t.Fatalf("claimed %d; want 1", len(mine))
	}
	now := b.Clock.Now().Add(6 * time.Second) // the lease has ended
	claim := func(noTakeover bool) []store.Claim {
		t.Helper()
		cs, err := queue.New(other).Claim(b.Ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(5 * time.Second), Lease: store.NewID(),
			Limit: 10, PerWebhook: 10, NoTakeover: noTakeover})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		return cs
	}
	if cs := claim(true); len(cs) != 1 || cs[0].LogID == mine[0].LogID || cs[0].TakenOver {
		t.Fatalf("a claim unsure of its writes took %d logs (%v); want only the one never leased", len(cs), cs)
	}
	if cs := claim(true); len(cs) != 0 {
		t.Fatalf("a second claim unsure of its writes took %d logs; want none: the ended lease is left to its holder", len(cs))
	}
	if n, err := b.Q.RenewLeases(b.Ctx, []store.Held{{LogID: mine[0].LogID, Lease: mine[0].Lease}}, now.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("its holder renewed %d, %v, once its writes landed again; want its lease renewed", n, err)
	}
	if cs := claim(false); len(cs) != 0 {
		t.Fatalf("a claim sure of its writes took %d logs of a renewed lease; want none", len(cs))
	}
	now = now.Add(2 * time.Minute) // the renewed lease has ended too, and no one renewed it
	took := false
	for _, c := range claim(false) {
		if c.LogID == mine[0].LogID {
			took = true
			if other.Engine() == "postgres" && !c.TakenOver {
				t.Errorf("the log taken over is not reported so")
			}
		}
	}
	if !took {
		t.Fatalf("a claim sure of its writes did not take the log whose lease ended")
	}
}

// testBeats: each process's beat is a row of its own, written again at
// each beat; EndBeats removes the stopping process's row and those of
// processes silent since the time it is given.
func testBeats(t *testing.T, b *Bundle) {
	now := b.Clock.Now()
	for _, p := range []string{"a", "b", "c"} {
		if err := b.Q.Beat(b.Ctx, p, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Q.Beat(b.Ctx, "a", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM delivery_processes`); n != 3 {
		t.Fatalf("%d rows after four beats of three processes; want 3", n)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM delivery_processes WHERE id = 'a' AND beat_at = ?`, now.Add(time.Hour).UnixMilli()); n != 1 {
		t.Fatalf("a's row does not hold its latest beat")
	}
	if err := b.Q.EndBeats(b.Ctx, "b", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM delivery_processes WHERE id = 'a'`); n != 1 {
		t.Fatalf("EndBeats removed a, which beat since; want only b and the silent c gone (%d rows left)", b.Count(t, `SELECT COUNT(*) FROM delivery_processes`))
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM delivery_processes`); n != 1 {
		t.Fatalf("%d rows after b stopped and c fell silent; want 1", n)
	}
}
