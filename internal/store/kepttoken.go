package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// API tokens kept in the process, checked in the statement that uses them
// (decision 0110). On PostgreSQL a license created over the API costs the
// read of its token and the statement that writes it, two round trips.
// Authenticate keeps each token it finds valid for a second; a request
// whose work is that one statement (the API says which) may take the token
// from there, and the statement then checks it itself: it writes nothing
// and fails with ErrAPITokenRefused when the token was revoked or has
// expired meanwhile, in this process or any other. The API answers nothing
// before a check has been made, the statement's or a read (TokenCheck), so
// a revoked token is refused at its next request, as when every request
// read it.

// keptTokenFor is how long a token read valid is used without a read. The
// statement checks the token itself; what a kept entry can hold stale is
// its account's fields (its rate limit, set by the operator), for at most
// this long.
const keptTokenFor = time.Second

// maxKeptTokens bounds the tokens kept; when that many are, the store
// forgets them all, so that tokens without end cost no more memory.
const maxKeptTokens = 1024

// ErrAPITokenRefused is ChangeAndFire's error when the API token its
// context carries to check (WithTokenCheck) is unknown, revoked or
// expired: nothing was written.
var ErrAPITokenRefused = errors.New("the API token is unknown, revoked or expired")

type keptToken struct {
	account Account
	token   APIToken
	readAt  time.Time
}

type keptTokens struct {
	mu     sync.Mutex
	byHash map[string]keptToken
}

func (k *keptTokens) put(hash string, t keptToken) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byHash == nil || len(k.byHash) >= maxKeptTokens {
		k.byHash = make(map[string]keptToken)
	}
	k.byHash[hash] = t
}

func (k *keptTokens) get(hash string) (keptToken, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.byHash[hash]
	return t, ok
}

func (k *keptTokens) forget(hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.byHash, hash)
}

// forgetID forgets the token whose id is id: one revoked here.
func (k *keptTokens) forgetID(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, t := range k.byHash {
		if t.token.ID == id {
			delete(k.byHash, h)
		}
	}
}

// TokenCheck is an API token taken from the kept ones, not yet checked:
// the statement that uses it checks it (ChangeAndFire, PostgreSQL only),
// and Made says whether one has.
type TokenCheck struct {
	tokenID, accountID string
	made               atomic.Bool
}

// Made reports whether a statement has found the token valid.
func (c *TokenCheck) Made() bool { return c.made.Load() }

type tokenCheckKey struct{}

// WithTokenCheck returns ctx carrying c: ChangeAndFire under it checks c's
// token in its statement.
func WithTokenCheck(ctx context.Context, c *TokenCheck) context.Context {
	return context.WithValue(ctx, tokenCheckKey{}, c)
}

// tokenCheckFrom returns the check ctx carries that no statement has made.
func tokenCheckFrom(ctx context.Context) *TokenCheck {
	c, _ := ctx.Value(tokenCheckKey{}).(*TokenCheck)
	if c == nil || c.Made() {
		return nil
	}
	return c
}

// KeptToken returns the token whose hash is hash and its account as
// Authenticate found them less than a second ago, and a check to carry
// (WithTokenCheck) to the statement that will check it; ok is false on
// SQLite, whose reads cost no round trip, and when no such token is kept,
// or its use is to be recorded (LastUsedInterval): then Authenticate reads
// it. A kept token may since have been revoked: nothing may be answered
// under it before a check is made (the statement's, or Authenticate).
func (s *Store) KeptToken(hash string) (Account, APIToken, *TokenCheck, bool) {
	if s.eng.name() != "postgres" {
		return Account{}, APIToken{}, nil, false
	}
	k, ok := s.keptTokens.get(hash)
	if !ok {
		return Account{}, APIToken{}, nil, false
	}
	now := s.now()
	if now.Sub(k.readAt) >= keptTokenFor || now.Before(k.readAt) ||
		(k.token.ExpiresAt != nil && !k.token.ExpiresAt.After(now)) ||
		k.token.LastUsedAt == nil || now.Sub(*k.token.LastUsedAt) >= LastUsedInterval {
		return Account{}, APIToken{}, nil, false
	}
	return k.account, k.token, &TokenCheck{tokenID: k.token.ID, accountID: k.account.ID}, true
}

// isAPITokenRefused says whether err is herald_api_token_refused's.
func isAPITokenRefused(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "HT001"
}
