package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// webhookOf creates an enabled webhook of account subscribed to
// license.created.
func (b *Bundle) webhookOf(t testing.TB, account store.Account, name string) store.Webhook {
	t.Helper()
	w, err := b.St.CreateWebhook(b.Ctx, account.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name,
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_" + name + "_0123456789"})
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w
}

// fireAs fires n license.created events of account.
func (b *Bundle) fireAs(t testing.TB, account store.Account, n int) {
	t.Helper()
	for i := range n {
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(b.Ctx, account.ID, event.LicenseCreated, map[string]any{"n": i})
			return err
		}); err != nil {
			t.Fatalf("fire: %v", err)
		}
	}
}

// testClaimSharesBetweenAccounts: one account's deep backlog, older than
// everything, does not hide another account's newer logs from a claim
// smaller than the backlog; the claim takes account by account; and an
// account's room caps its webhooks together.
func testClaimSharesBetweenAccounts(t *testing.T, b *Bundle) {
	a := b.Account
	b.webhookOf(t, a, "a1")
	b.webhookOf(t, a, "a2")
	b.fireAs(t, a, 150) // 300 logs of A, due first
	b.Clock.Add(time.Second)
	other := b.NewAccount(t, "b@example.com")
	hookB := b.webhookOf(t, other, "b1")
	b.fireAs(t, other, 5)

	got := b.Claim(t, b.St, time.Second, time.Minute, 10, 1000)
	per := map[string]int{}
	for _, c := range got {
		per[c.AccountID]++
	}
	if per[other.ID] != 5 || per[a.ID] != 5 {
		t.Fatalf("claimed A=%d B=%d of a claim of 10; want 5 and 5: B's logs behind A's backlog of 300", per[a.ID], per[other.ID])
	}

	b.fireAs(t, other, 5)
	for _, tc := range []struct {
		name        string
		perAccount  int
		accountRoom map[string]int
		wantA       int
		wantB       int
	}{
		{"the named account at its room, the other at PerAccount", 4, map[string]int{a.ID: 2}, 2, 4},
		{"an account with no room passed over", 100, map[string]int{a.ID: 0}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := b.Clock.Now().Add(time.Second)
			got, err := b.Q.Claim(b.Ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(),
				Limit: 100, PerWebhook: 1000, PerAccount: tc.perAccount, AccountRoom: tc.accountRoom})
			if err != nil {
				t.Fatal(err)
			}
			per := map[string]int{}
			for _, c := range got {
				per[c.AccountID]++
				if c.AccountID == other.ID && c.WebhookID != hookB.ID {
					t.Errorf("claim of B names webhook %s; want %s", c.WebhookID, hookB.ID)
				}
			}
			if per[a.ID] != tc.wantA || per[other.ID] != tc.wantB {
				t.Fatalf("claimed A=%d B=%d; want %d and %d", per[a.ID], per[other.ID], tc.wantA, tc.wantB)
			}
		})
	}
}

// testClaimTakesFirstAttemptsBeforeRetries: retries whose time came, older in
// due order than every first attempt, do not take a claim's places while
// first attempts are due.
func testClaimTakesFirstAttemptsBeforeRetries(t *testing.T, b *Bundle) {
	failing := b.Webhook(t, "failing")
	b.Fire(t, b.St, 5)
	first := b.Claim(t, b.St, 0, time.Minute, 5, 5)
	if len(first) != 5 {
		t.Fatalf("claimed %d; want 5", len(first))
	}
	var outs []store.Outcome
	for _, c := range first {
		outs = append(outs, Outcome(c, store.Retry, 500, b.Clock.Now())) // due again in a minute
	}
	b.Complete(t, b.St, 50, outs...)
	b.Clock.Add(2 * time.Minute)
	b.Webhook(t, "fresh")
	b.Fire(t, b.St, 3) // first attempts for both webhooks, newer than the retries

	got := b.Claim(t, b.St, 0, time.Minute, 6, 100)
	if len(got) != 6 {
		t.Fatalf("claimed %d; want 6", len(got))
	}
	for _, c := range got {
		if c.AttemptCount != 0 {
			t.Errorf("claimed a retry of webhook %s (attempt %d) while 6 first attempts were due", c.WebhookID, c.AttemptCount+1)
		}
	}
	rest := b.Claim(t, b.St, 0, time.Minute, 10, 100)
	retries := 0
	for _, c := range rest {
		if c.AttemptCount > 0 && c.WebhookID == failing.ID {
			retries++
		}
	}
	if len(rest) != 5 || retries != 5 {
		t.Fatalf("next claim took %d logs, %d of them retries; want the 5 retries", len(rest), retries)
	}
}
