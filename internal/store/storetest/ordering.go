package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// orderedWebhook creates a webhook of the test's account subscribed to
// license.created and license.renewed, ordered by license when ordering
// is set, holding or going on after a failure as onFailure says.
func (b *Bundle) orderedWebhook(t testing.TB, name, ordering, onFailure string) store.Webhook {
	t.Helper()
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name,
		Events: []event.Kind{event.LicenseCreated, event.LicenseRenewed}, Enabled: true, Token: "whsec_" + name + "_0123456789",
		Ordering: ordering, OrderingOnFailure: onFailure})
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	if w.Ordering != ordering || w.OrderingOnFailure != onFailure {
		t.Fatalf("webhook ordering %q on failure %q; want %q, %q", w.Ordering, w.OrderingOnFailure, ordering, onFailure)
	}
	return w
}

// fireLicenses fires, for each license, license.created and then n-1
// license.renewed, the licenses interleaved (each round one event of every
// license), and returns each event's license and sequence by event id.
func (b *Bundle) fireLicenses(t testing.TB, licenses []string, n int) map[string]licenseEvent {
	t.Helper()
	fired := map[string]licenseEvent{}
	for i := range n {
		var firings []store.Firing
		for _, lic := range licenses {
			f := store.Firing{AccountID: b.Account.ID, License: lic, Kind: event.LicenseRenewed, Data: map[string]any{"n": i}}
			if i == 0 {
				f.Kind, f.First = event.LicenseCreated, true
			}
			firings = append(firings, f)
		}
		err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			ids, err := tx.FireBatch(b.Ctx, firings)
			for j, id := range ids {
				fired[id] = licenseEvent{licenses[j], i + 1}
			}
			return err
		})
		if err != nil {
			t.Fatalf("fire: %v", err)
		}
	}
	return fired
}

type licenseEvent struct {
	license string
	seq     int
}

// of keeps the claims of one webhook.
func of(cs []store.Claim, webhookID string) []store.Claim {
	var out []store.Claim
	for _, c := range cs {
		if c.WebhookID == webhookID {
			out = append(out, c)
		}
	}
	return out
}

// names says which license events claims are, sorted, for messages and
// comparisons: "A1 B1".
func names(cs []store.Claim, fired map[string]licenseEvent, label map[string]string) string {
	var s []string
	for _, c := range cs {
		e := fired[c.EventID]
		s = append(s, fmt.Sprintf("%s%d", label[e.license], e.seq))
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

// testOrderedClaimsFollowEachLicense: a webhook ordered by license is
// claimed only each license's earliest waiting event, whatever is due:
// the next one after the earlier succeeded, or ended failed with the
// webhook going on; a retry waiting, a lease in flight and a lease whose
// process died all hold the later ones back, and licenses do not wait for
// each other. An unordered webhook gets everything at once.
func testOrderedClaimsFollowEachLicense(t *testing.T, b *Bundle) {
	ordered := b.orderedWebhook(t, "ordered", store.OrderingLicense, store.OnFailureContinue)
	plain := b.orderedWebhook(t, "plain", store.OrderingNone, store.OnFailureHold)
	la, lb := store.NewID(), store.NewID()
	label := map[string]string{la: "A", lb: "B"}
	fired := b.fireLicenses(t, []string{la, lb}, 3)
	other := b.Open(t)

	got := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if n := len(of(got, plain.ID)); n != 6 {
		t.Fatalf("unordered webhook: %d claimed; want all 6", n)
	}
	first := of(got, ordered.ID)
	if s := names(first, fired, label); s != "[A1 B1]" {
		t.Fatalf("ordered webhook claimed %s; want [A1 B1]", s)
	}
	var a1, b1 store.Claim
	for _, c := range first {
		if fired[c.EventID].license == la {
			a1 = c
		} else {
			b1 = c
		}
	}
	// In flight: nothing of either license is claimed, by any handle.
	if s := names(of(b.Claim(t, other, 0, time.Minute, 100, 100), ordered.ID), fired, label); s != "[]" {
		t.Fatalf("while A1 and B1 are in flight, claimed %s", s)
	}
	// B1 delivered: B2 comes; A1 waiting for its retry holds A2 back.
	now := b.Clock.Now()
	b.Complete(t, b.St, 50, Outcome(b1, store.Delivered, 200, now), Outcome(a1, store.Retry, 503, now))
	got = of(b.Claim(t, other, time.Second, time.Minute, 100, 100), ordered.ID)
	if s := names(got, fired, label); s != "[B2]" {
		t.Fatalf("after B1 delivered and A1 to be retried, claimed %s; want [B2]", s)
	}
	// A1's retry is claimed and its process dies: until its lease ends,
	// and after, when another takes it over, A2 is not claimed.
	got = of(b.Claim(t, b.St, 2*time.Minute, time.Minute, 100, 100), ordered.ID)
	if s := names(got, fired, label); s != "[A1 B2]" {
		t.Fatalf("at A1's retry, claimed %s; want A1 and B2, whose lease ended, [A1 B2]", s)
	}
	got = of(b.Claim(t, other, 2*time.Minute+30*time.Second, time.Minute, 100, 100), ordered.ID)
	if s := names(got, fired, label); s != "[]" {
		t.Fatalf("with A1 and B2 leased, claimed %s; want nothing", s)
	}
	got = of(b.Claim(t, other, 4*time.Minute, time.Minute, 100, 100), ordered.ID)
	if s := names(got, fired, label); s != "[A1 B2]" {
		t.Fatalf("once the leases ended, claimed %s; want the leased ones taken over, [A1 B2]", s)
	}
	// A1 ends failed; the webhook goes on: A2 comes.
	var taken store.Claim
	var b2again store.Claim
	for _, c := range got {
		if fired[c.EventID].license == la {
			taken = c
		} else {
			b2again = c
		}
	}
	at := b.Clock.Now().Add(4 * time.Minute)
	b.Complete(t, other, 50, Outcome(taken, store.Exhausted, 500, at), Outcome(b2again, store.Delivered, 200, at))
	got = of(b.Claim(t, b.St, 4*time.Minute, time.Minute, 100, 100), ordered.ID)
	if s := names(got, fired, label); s != "[A2 B3]" {
		t.Fatalf("after A1 failed (going on) and B2 delivered, claimed %s; want [A2 B3]", s)
	}
	if held, err := b.Q.Held(b.Ctx, taken.LogID); err != nil || held {
		t.Fatalf("A1 holds (%v, %v) on a webhook that goes on", held, err)
	}
}

// testAFailedOrderedLogHoldsItsLicense: on "hold", a log that ends failed
// holds its license's later events back, never claimed itself, until it
// is skipped or resent and delivered; a failed resend keeps holding;
// another license goes on meanwhile. A log that holds nothing cannot be
// skipped. Turning the webhook to going on releases what it held.
func testAFailedOrderedLogHoldsItsLicense(t *testing.T, b *Bundle) {
	w := b.orderedWebhook(t, "held", store.OrderingLicense, store.OnFailureHold)
	la, lb, lc := store.NewID(), store.NewID(), store.NewID()
	label := map[string]string{la: "A", lb: "B", lc: "C"}
	fired := b.fireLicenses(t, []string{la, lb, lc}, 2)
	got := of(b.Claim(t, b.St, 0, time.Minute, 100, 100), w.ID)
	if s := names(got, fired, label); s != "[A1 B1 C1]" {
		t.Fatalf("claimed %s; want [A1 B1 C1]", s)
	}
	byLicense := map[string]store.Claim{}
	for _, c := range got {
		byLicense[fired[c.EventID].license] = c
	}
	now := b.Clock.Now()
	b.Complete(t, b.St, 50, Outcome(byLicense[la], store.Exhausted, 500, now), Outcome(byLicense[lb], store.Exhausted, 500, now),
		Outcome(byLicense[lc], store.Exhausted, 500, now))
	for _, lic := range []string{la, lb, lc} {
		if l := b.log(t, byLicense[lic].LogID); l.Status != store.Failed {
			t.Fatalf("log %s is %s; want failed", label[lic], l.Status)
		}
		if held, err := b.Q.Held(b.Ctx, byLicense[lic].LogID); err != nil || !held {
			t.Fatalf("%s1 holds %v (%v); want held", label[lic], held, err)
		}
		if l := b.log(t, byLicense[lic].LogID); !l.Holding {
			t.Fatalf("log %s reads not holding; want holding", label[lic])
		}
	}
	// The list of what holds, as the API's ?holding=true reads it.
	holding := func() []string {
		t.Helper()
		logs, _, err := b.St.Logs(b.Ctx, b.Account.ID, store.LogFilter{WebhookID: w.ID, Holding: true, Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatalf("list holding logs: %v", err)
		}
		var out []string
		for _, l := range logs {
			if !l.Holding {
				t.Errorf("log %s listed as holding reads not holding", l.ID)
			}
			out = append(out, l.ID)
		}
		slices.Sort(out)
		return out
	}
	want := []string{byLicense[la].LogID, byLicense[lb].LogID, byLicense[lc].LogID}
	slices.Sort(want)
	if got := holding(); !slices.Equal(got, want) {
		t.Fatalf("holding logs %v; want the three failed first events %v", got, want)
	}
	if s := names(of(b.Claim(t, b.St, time.Hour, time.Minute, 100, 100), w.ID), fired, label); s != "[]" {
		t.Fatalf("with every license held, claimed %s an hour later; want nothing", s)
	}
	// The backlog is the three later events; the held logs are failed.
	if g := b.gauges(t); g.Backlog[store.Queued] != 3 || g.Backlog[store.Retrying] != 0 || g.Backlog[store.Pending] != 0 {
		t.Fatalf("backlog %v; want the 3 later events queued and nothing of the held", g.Backlog)
	}
	// A skipped, B resent and failed, C resent and delivered.
	if err := b.Q.SkipHeld(b.Ctx, b.Account.ID, byLicense[la].LogID); err != nil {
		t.Fatalf("skip: %v", err)
	}
	if err := b.Q.SkipHeld(b.Ctx, b.Account.ID, byLicense[la].LogID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("skipping again: %v; want a conflict", err)
	}
	if err := b.Q.SkipHeld(b.Ctx, b.Account.ID, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("skipping an unknown log: %v; want not found", err)
	}
	for lic, ok := range map[string]bool{lb: false, lc: true} {
		c, err := b.Q.BeginResend(b.Ctx, b.Account.ID, byLicense[lic].LogID, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatalf("resend: %v", err)
		}
		b.Complete(t, b.St, 50, resent(c, "", ok, b.Clock.Now()))
	}
	got = of(b.Claim(t, b.St, time.Second, time.Minute, 100, 100), w.ID)
	if s := names(got, fired, label); s != "[A2 C2]" {
		t.Fatalf("after A1 skipped, B1 resent in vain and C1 resent, claimed %s; want [A2 C2]", s)
	}
	if l := b.log(t, byLicense[la].LogID); l.Status != store.Failed || l.Holding {
		t.Fatalf("skipped log is %s, holding %v; want it still failed, holding nothing", l.Status, l.Holding)
	}
	if got := holding(); !slices.Equal(got, []string{byLicense[lb].LogID}) {
		t.Fatalf("holding logs %v after A1 skipped, B1 resent in vain and C1 delivered; want B1 alone (%s)", got, byLicense[lb].LogID)
	}
	// Going on from now: B2 comes.
	on := store.OnFailureContinue
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{OrderingOnFailure: &on}); err != nil {
		t.Fatalf("update webhook: %v", err)
	}
	got = of(b.Claim(t, b.St, 2*time.Second, time.Minute, 100, 100), w.ID)
	if s := names(got, fired, label); s != "[B2]" {
		t.Fatalf("after the webhook turned to going on, claimed %s; want [B2]", s)
	}
}

// testOrderedClaimsAcrossHandles: several handles (processes, on
// PostgreSQL) claiming and recording at once, a third of first attempts
// failing, never take a license's event before the earlier one ended, and
// take them all.
func testOrderedClaimsAcrossHandles(t *testing.T, b *Bundle) {
	w := b.orderedWebhook(t, "many", store.OrderingLicense, store.OnFailureHold)
	var licenses []string
	for range 12 {
		licenses = append(licenses, store.NewID())
	}
	const each = 4
	fired := b.fireLicenses(t, licenses, each)
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var mu sync.Mutex
	seen := map[string][]int{} // each license's sequences, in the order claimed
	inFlight := map[string]bool{}
	done := 0
	var failures []string
	Parallel(len(handles), func(i int) {
		st := handles[i]
		for step := 0; step < 400; step++ {
			mu.Lock()
			finished := done == len(fired) || len(failures) > 0
			mu.Unlock()
			if finished {
				return
			}
			// Retries fall due a minute after the outcomes' time, now:
			// claims an hour ahead find them due, and leases that end
			// later than any claim's time, so none is taken over.
			cs := of(b.Claim(t, st, time.Hour, time.Hour, 5, 5), w.ID)
			var outs []store.Outcome
			mu.Lock()
			for _, c := range cs {
				e := fired[c.EventID]
				if inFlight[e.license] {
					failures = append(failures, fmt.Sprintf("license %s: %d claimed while an earlier one is in flight", e.license, e.seq))
				}
				inFlight[e.license] = true
				r, code := store.Delivered, 200
				if c.AttemptCount == 0 && rand.IntN(3) == 0 {
					r, code = store.Retry, 503
				} else {
					seen[e.license] = append(seen[e.license], e.seq)
					done++
				}
				outs = append(outs, Outcome(c, r, code, b.Clock.Now()))
			}
			mu.Unlock()
			if len(outs) > 0 {
				mu.Lock()
				for _, c := range cs {
					delete(inFlight, fired[c.EventID].license)
				}
				mu.Unlock()
				if _, err := queue.New(st).Complete(b.Ctx, outs, 50); err != nil {
					t.Errorf("complete: %v", err)
					return
				}
			}
		}
	})
	for _, f := range failures {
		t.Error(f)
	}
	if done != len(fired) {
		t.Fatalf("%d of %d events delivered", done, len(fired))
	}
	for _, lic := range licenses {
		for i, s := range seen[lic] {
			if s != i+1 {
				t.Fatalf("license %s delivered in the order %v", lic, seen[lic])
			}
		}
	}
}
