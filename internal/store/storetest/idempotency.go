package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// idemRequest is a POST of body under key for account.
func idemRequest(account, key, body string) store.IdempotentRequest {
	return store.IdempotentRequest{AccountID: account, Key: key, Method: "POST", Path: "/v3/licenses",
		BodyHash: sha256.Sum256([]byte(body))}
}

func (b *Bundle) claimKey(t testing.TB, st *store.Store, r store.IdempotentRequest) store.IdempotencyClaim {
	t.Helper()
	c, err := st.ClaimIdempotencyKey(b.Ctx, r)
	if err != nil {
		t.Fatalf("claim %q: %v", r.Key, err)
	}
	return c
}

// fireUnder fires one event in a transaction made under claim c, as an API
// request's change is.
func (b *Bundle) fireUnder(st *store.Store, c store.IdempotencyClaim) error {
	ctx := store.WithIdempotencyClaim(b.Ctx, c)
	return st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Fire(ctx, b.Account.ID, event.LicenseCreated, map[string]any{"n": 1})
		return err
	})
}

// testIdempotencyKeys: a key's outcomes, one per step, in the order a
// client's tries meet them; the clock moves instead of sleeping.
func testIdempotencyKeys(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "b@example.com")
	first := b.claimKey(t, b.St, idemRequest(b.Account.ID, "k1", `{"a":1}`))
	if first.Outcome != store.KeyClaimed {
		t.Fatalf("first claim: outcome %d; want claimed", first.Outcome)
	}
	if err := b.fireUnder(b.St, first); err != nil {
		t.Fatalf("change under the claim: %v", err)
	}
	// The answer of a webhook's creation holds its signing token: kept
	// sealed, never in plain text (decision 0118).
	answer := store.IdempotentAnswer{Status: 201, ContentType: "application/json; charset=utf-8", Location: "/v3/webhooks/x",
		Body: []byte("{\"id\":\"x\",\"token\":\"whsec_kept_answer_secret_0123456789\"}\n")}

	steps := []struct {
		name string
		do   func()
		req  store.IdempotentRequest
		want store.ClaimOutcome
	}{
		{"same key while running", nil, idemRequest(b.Account.ID, "k1", `{"a":1}`), store.KeyInUse},
		{"same key, other body", nil, idemRequest(b.Account.ID, "k1", `{"a":2}`), store.KeyMismatch},
		{"same key, other path", nil, func() store.IdempotentRequest {
			r := idemRequest(b.Account.ID, "k1", `{"a":1}`)
			r.Path = "/v3/products"
			return r
		}(), store.KeyMismatch},
		{"another account, same key", nil, idemRequest(other.ID, "k1", `{"a":1}`), store.KeyClaimed},
		{"same key once answered", func() {
			if err := b.St.RecordIdempotentAnswer(b.Ctx, first, answer); err != nil {
				t.Fatal(err)
			}
			var kept []byte
			if err := b.St.QueryRow(b.Ctx, `SELECT body FROM idempotency_keys WHERE account_id = ? AND key = 'k1'`, b.Account.ID).Scan(&kept); err != nil {
				t.Fatal(err)
			}
			if len(kept) == 0 || bytes.Contains(kept, []byte("whsec_kept_answer_secret")) || bytes.Contains(kept, []byte(`"id"`)) {
				t.Errorf("the kept answer is stored as %q; want it sealed", kept)
			}
		}, idemRequest(b.Account.ID, "k1", `{"a":1}`), store.KeyDone},
		{"same key just before 24 h", func() { b.Clock.Add(store.IdempotencyTTL - time.Millisecond) },
			idemRequest(b.Account.ID, "k1", `{"a":1}`), store.KeyDone},
		{"same key after 24 h, other body", func() { b.Clock.Add(time.Millisecond) },
			idemRequest(b.Account.ID, "k1", `{"a":2}`), store.KeyClaimed},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		c := b.claimKey(t, b.St, s.req)
		if c.Outcome != s.want {
			t.Fatalf("%s: outcome %d; want %d", s.name, c.Outcome, s.want)
		}
		if s.want == store.KeyDone && (c.Answer.Status != answer.Status || string(c.Answer.Body) != string(answer.Body) ||
			c.Answer.Location != answer.Location || c.Answer.ContentType != answer.ContentType) {
			t.Errorf("%s: answer %+v; want %+v", s.name, c.Answer, answer)
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM events`); n != 1 {
		t.Errorf("events: %d; want 1", n)
	}

	// Retention removes keys past their day, and only those.
	b.claimKey(t, b.St, idemRequest(b.Account.ID, "k-old", `{}`))
	b.Clock.Add(store.IdempotencyTTL + time.Millisecond)
	b.claimKey(t, b.St, idemRequest(b.Account.ID, "k-new", `{}`))
	n, err := b.St.PurgeIdempotencyKeys(b.Ctx, b.Clock.Now().Add(-store.IdempotencyTTL), 100)
	if err != nil {
		t.Fatal(err)
	}
	// k1 (re-claimed a day ago), the other account's k1 and k-old went.
	if left := b.Count(t, `SELECT COUNT(*) FROM idempotency_keys`); n != 3 || left != 1 {
		t.Errorf("purge removed %d keys and left %d; want 3 and 1", n, left)
	}
}

// testIdempotencyAfterACrash: a first try cut off by a crash holds its key
// until its lock ends; then a key whose change was never made is claimed
// again, and the cut-off try can no longer commit under it, while a key
// whose change was made is never run again.
func testIdempotencyAfterACrash(t *testing.T, b *Bundle) {
	other := b.Open(t)
	tests := []struct {
		name    string
		applied bool
		want    store.ClaimOutcome
	}{
		{"change not made", false, store.KeyClaimed},
		{"change made, answer lost", true, store.KeyAnswerLost},
	}
	for _, tt := range tests {
		key := "crash-" + tt.name
		first := b.claimKey(t, b.St, idemRequest(b.Account.ID, key, `{}`))
		if tt.applied {
			if err := b.fireUnder(b.St, first); err != nil {
				t.Fatal(err)
			}
		}
		if c := b.claimKey(t, other, idemRequest(b.Account.ID, key, `{}`)); c.Outcome != store.KeyInUse ||
			!c.Until.Equal(b.Clock.Now().Add(store.IdempotencyLock)) {
			t.Fatalf("%s: retry within the lock: outcome %d until %v; want in use until the lock ends", tt.name, c.Outcome, c.Until)
		}
		b.Clock.Add(store.IdempotencyLock)
		retry := b.claimKey(t, other, idemRequest(b.Account.ID, key, `{}`))
		if retry.Outcome != tt.want {
			t.Fatalf("%s: retry after the lock: outcome %d; want %d", tt.name, retry.Outcome, tt.want)
		}
		if !tt.applied {
			before := b.Count(t, `SELECT COUNT(*) FROM events`)
			if err := b.fireUnder(b.St, first); !errors.Is(err, store.ErrIdempotencyKeyLost) {
				t.Errorf("%s: the cut-off try's change: %v; want ErrIdempotencyKeyLost", tt.name, err)
			}
			if after := b.Count(t, `SELECT COUNT(*) FROM events`); after != before {
				t.Errorf("%s: the refused change fired %d events", tt.name, after-before)
			}
		}
	}

	// A try that failed before its change (a 5xx) gives its key back.
	c := b.claimKey(t, b.St, idemRequest(b.Account.ID, "released", `{}`))
	if err := b.St.ReleaseIdempotencyKey(b.Ctx, c); err != nil {
		t.Fatal(err)
	}
	if c := b.claimKey(t, other, idemRequest(b.Account.ID, "released", `{}`)); c.Outcome != store.KeyClaimed {
		t.Errorf("retry of a released key: outcome %d; want claimed", c.Outcome)
	}
}

// testConcurrentIdempotentClaims: tries of one key at once, from several
// processes, are claimed once.
func testConcurrentIdempotentClaims(t *testing.T, b *Bundle) {
	stores := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var claimed, inUse atomic.Int32
	Parallel(12, func(i int) {
		c, err := stores[i%len(stores)].ClaimIdempotencyKey(b.Ctx, idemRequest(b.Account.ID, "same", `{}`))
		switch {
		case err != nil:
			t.Errorf("claim: %v", err)
		case c.Outcome == store.KeyClaimed:
			claimed.Add(1)
		case c.Outcome == store.KeyInUse:
			inUse.Add(1)
		}
	})
	if claimed.Load() != 1 || inUse.Load() != 11 {
		t.Errorf("claimed %d, in use %d; want 1 and 11", claimed.Load(), inUse.Load())
	}
}
