package delivery

import (
	"fmt"
	"slices"
	"testing"
)

func TestAccountShare(t *testing.T) {
	for _, tc := range []struct {
		concurrency, holders, want int
	}{
		{512, 1, 448}, // alone: all but the eighth kept for a newcomer
		{512, 2, 224},
		{512, 3, 149},
		{64, 1, 56},
		{64, 2, 28},
		{64, 0, 56}, // nobody holds yet: as if alone
		{8, 1, 7},
		{2, 5, 1}, // never none
		{1, 1, 1},
	} {
		if got := accountShare(tc.concurrency, tc.holders); got != tc.want {
			t.Errorf("accountShare(%d, %d) = %d; want %d", tc.concurrency, tc.holders, got, tc.want)
		}
	}
}

// TestRoomSharesBetweenAccounts holds slots for webhooks of accounts as
// claims would, and checks what the next claim may take of each.
func TestRoomSharesBetweenAccounts(t *testing.T) {
	type held struct {
		account, webhook string
		n                int
	}
	for _, tc := range []struct {
		name           string
		held           []held
		wantPerAccount int            // an account holding nothing
		wantRoom       map[string]int // accounts holding some
		wantExcluded   []string       // webhooks passed over
	}{
		{"nobody holds: an account may take all but an eighth", nil, 56, map[string]int{}, nil},
		{"one account at its share: its webhooks passed over, a newcomer gets half of the rest's share",
			[]held{{"A", "a1", 4}, {"A", "a2", 4}, {"A", "a3", 48}},
			28, map[string]int{"A": 0}, []string{"a1", "a2", "a3"}},
		{"two accounts: each its half, the one over it passed over",
			[]held{{"A", "a1", 40}, {"B", "b1", 2}},
			18, map[string]int{"A": 0, "B": 26}, []string{"a1"}},
		{"three accounts under their shares",
			[]held{{"A", "a1", 3}, {"B", "b1", 2}, {"C", "c1", 1}},
			14, map[string]int{"A": 15, "B": 16, "C": 17}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(nil, Config{Concurrency: 64, PerWebhook: 64})
			for _, h := range tc.held {
				for range h.n {
					d.slots.acquire(h.account, h.webhook, 0)
				}
			}
			_, _, exclude, perAccount, accountRoom := d.slots.room()
			if perAccount != tc.wantPerAccount {
				t.Errorf("room for an account holding nothing: got %d; want %d", perAccount, tc.wantPerAccount)
			}
			for account, want := range tc.wantRoom {
				if got := accountRoom[account]; got != want {
					t.Errorf("room of account %s: got %d; want %d", account, got, want)
				}
			}
			slices.Sort(exclude)
			for _, id := range tc.wantExcluded {
				if !slices.Contains(exclude, id) {
					t.Errorf("webhook %s not passed over; excluded %v", id, exclude)
				}
			}
			if len(tc.wantExcluded) == 0 && len(exclude) > 0 {
				t.Errorf("excluded %v; want none", exclude)
			}
		})
	}
}

// TestManualSendsCountForTheirAccount: a Test or Resend holds a slot of its
// webhook's account, and gives it back.
func TestManualSendsCountForTheirAccount(t *testing.T) {
	d := New(nil, Config{Concurrency: 64, PerWebhook: 64})
	var during int
	if _, err := d.slots.manual(nil, "A", "a1", func() Result {
		d.slots.mu.Lock()
		during = d.slots.heldBy("A")
		d.slots.mu.Unlock()
		return Result{}
	}); err != nil {
		t.Fatal(err)
	}
	if during != 1 {
		t.Errorf("account A held %d during a manual send; want 1", during)
	}
	if d.slots.heldBy("A") != 0 || d.slots.accountsActive != 0 {
		t.Errorf("after the send account A holds %d, %d accounts hold slots; want none", d.slots.heldBy("A"), d.slots.accountsActive)
	}
}

// TestWebhookShareIsWithinItsAccount: a webhook's share is of its account's
// share, so one account's many webhooks do not shrink another's.
func TestWebhookShareIsWithinItsAccount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hooksA int // webhooks of A holding 4 slots each
		want   int // share of B's one webhook, holding 1
	}{
		{"B alone", 0, 224},         // 448 alone, /(1+1)
		{"beside one of A", 1, 112}, // 224 for each of two accounts, /(1+1)
		{"beside 50 of A", 50, 112}, // unchanged: A's webhooks split A's share
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(nil, Config{Concurrency: 512, PerWebhook: 64})
			for i := range tc.hooksA {
				for range 4 {
					d.slots.acquire("A", fmt.Sprint("a", i), 0)
				}
			}
			d.slots.acquire("B", "b", 0)
			d.slots.mu.Lock()
			got := d.slots.shareOf(d.slots.hooks["b"])
			var shareA int
			if tc.hooksA > 0 {
				shareA = d.slots.shareOf(d.slots.hooks["a0"])
			}
			d.slots.mu.Unlock()
			if got != tc.want {
				t.Errorf("share of B's webhook: got %d; want %d", got, tc.want)
			}
			if tc.hooksA == 50 && shareA != 224/51 {
				t.Errorf("share of one of A's 50 webhooks: got %d; want %d", shareA, 224/51)
			}
		})
	}
}
