package ratelimit

import (
	"context"
	"testing"
	"time"
)

// Two processes count one account together at its rate; another rate, or
// another account, is counted apart; a nil Accounts or no rate allows all.
func TestAccountsShareTheirCounts(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	shared := &memShared{n: map[string]map[int64]int64{}}
	a, b := NewAccounts(), NewAccounts()
	a.now, b.now = c.now, c.now
	for range 6 {
		if !a.Allow("acct", 5).Allowed { // bursts of 10
			t.Fatal("refused within the burst")
		}
	}
	ctx := context.Background()
	if err := a.sync(ctx, shared); err != nil {
		t.Fatal(err)
	}
	b.Allow("acct", 5) // b learns of the account
	if err := b.sync(ctx, shared); err != nil {
		t.Fatal(err)
	}
	allowed := 0
	var last Decision
	for range 10 {
		if last = b.Allow("acct", 5); last.Allowed {
			allowed++
		}
	}
	if allowed != 3 || last.RetryAfter < time.Second {
		t.Errorf("b allowed %d more after a's 6 and its own 1 (last %+v); want 3, then Retry-After", allowed, last)
	}
	if !b.Allow("other", 5).Allowed || !b.Allow("acct", 7).Allowed {
		t.Error("another account, or the account at another rate, was refused")
	}
	var none *Accounts
	if !none.Allow("acct", 1).Allowed || !a.Allow("acct", 0).Allowed {
		t.Error("a nil Accounts, or no rate, refused")
	}
}
