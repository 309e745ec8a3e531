package portal

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
)

// Sign-in limits. Failed sign-ins are counted in the database, so every
// process shares them, in windows of SignInWindow, under three keys:
//
//   - one email from one client address: 10 failures, then that pair waits;
//   - one address, any email: 50 (people share addresses);
//   - one email from anywhere: 100, so that guessing spread over many
//     addresses is stopped too; but this one does not apply to a browser
//     that has signed in as that email before (it carries a cookie signed
//     with the server's key saying so). A stranger who knows the owner's
//     email can lock out other strangers, and their own addresses, but not
//     the owner in a browser the owner has used.
//
// Each attempt is counted before the password is checked, in one
// transaction, so parallel attempts cannot pass a limit; a success gives
// back its address's attempt and clears its email's counts.
const (
	SignInWindow = 15 * time.Minute
	maxPerPair   = 10
	maxPerAddr   = 50
	maxPerEmail  = 100
	knownCookie  = "herald_known" // this browser has signed in as the email it names (signed)
	knownFor     = 365 * 24 * time.Hour
)

// limiter counts failed sign-ins through the store.
type limiter struct {
	store *store.Store
	key   []byte // signs the known-browser cookie
}

func limitKey(kind string, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return kind + ":" + hex.EncodeToString(sum[:16]) // no email or address stored as such
}

func (l *limiter) keys(email, addr string) (pair, byAddr, byEmail string) {
	email = strings.ToLower(email)
	return limitKey("pair", email, addr), limitKey("addr", addr), limitKey("email", email)
}

// take counts an attempt for email from addr and returns 0, or how long to
// wait when a limit has used its attempts.
func (l *limiter) take(ctx context.Context, email, addr string, known bool) (time.Duration, error) {
	pair, byAddr, byEmail := l.keys(email, addr)
	limits := []store.SignInLimit{{Key: pair, Max: maxPerPair}, {Key: byAddr, Max: maxPerAddr}}
	if !known {
		limits = append(limits, store.SignInLimit{Key: byEmail, Max: maxPerEmail})
	}
	return l.store.TakeSignIn(ctx, limits, SignInWindow)
}

// succeeded gives back what a successful sign-in took.
func (l *limiter) succeeded(ctx context.Context, email, addr string) error {
	pair, byAddr, byEmail := l.keys(email, addr)
	return l.store.SignInSucceeded(ctx, []string{pair, byEmail}, byAddr)
}

// mark is the known-browser cookie's value for email.
func (l *limiter) mark(email string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte(strings.ToLower(email)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// known reports whether the request's browser has signed in as email before.
func (h *handler) known(r *http.Request, email string) bool {
	c, err := r.Cookie(h.cookieName(r, knownCookie))
	return err == nil && hmac.Equal([]byte(c.Value), []byte(h.limiter.mark(email)))
}

// anonymous applies the per-address rate limit to a page anyone may ask for.
func (h *handler) anonymous(fn handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := refuse(w, h.limits.ByAddress(r)); err != nil {
			return err
		}
		return fn(w, r)
	}
}

// refuse answers 429 with Retry-After when the limit's decision d refuses
// the request.
func refuse(w http.ResponseWriter, d ratelimit.Decision) error {
	if d.Allowed {
		return nil
	}
	d.SetHeaders(w.Header())
	return &httpError{Code: http.StatusTooManyRequests,
		Msg: fmt.Sprintf("Too many requests in a short time. Wait %s seconds, then try again.", w.Header().Get("Retry-After"))}
}
