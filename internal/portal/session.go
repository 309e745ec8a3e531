package portal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
)

// Session lifetime: a session ends after idleTimeout without a request, and
// in any case maxLifetime after sign-in. Its expiry moves at most once per
// touchEvery, so a burst of requests costs one write.
const (
	idleTimeout = 12 * time.Hour
	maxLifetime = 7 * 24 * time.Hour
	touchEvery  = time.Minute
)

// sessionFunc is a page or action behind sign-in.
type sessionFunc func(w http.ResponseWriter, r *http.Request, s store.Session) error

type sessionKey struct{}

// sessionHeld is where signedIn leaves the session for serve, which renders
// a page's error with the request it started with.
type sessionHeld struct{}

// sessionFrom returns the signed-in session a request carries, if any.
func sessionFrom(ctx context.Context) (store.Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(store.Session)
	return s, ok
}

// signedIn runs fn for a signed-in owner, checking the CSRF token of every
// request that is not GET or HEAD. Without a session it redirects to the
// sign-in page, which brings the owner back to the page they asked for.
func (h *handler) signedIn(fn sessionFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, ok, err := h.currentSession(r)
		if err != nil {
			return err
		}
		var d ratelimit.Decision
		if ok {
			d = h.limits.ByCredential(s.IDHash)
		} else {
			d = h.limits.ByAddress(r)
		}
		if err := refuse(w, d); err != nil {
			return err
		}
		if !ok {
			if _, err := r.Cookie(h.cookieName(r, sessionCookie)); err == nil {
				h.clearCookie(w, r, sessionCookie)
			}
			if r.Method == http.MethodPost {
				return h.sessionEnded(w, r)
			}
			to := "/signin"
			if r.Method == http.MethodGet && r.URL.Path != "/" {
				to = withQuery(to, "next", r.URL.RequestURI())
			}
			return redirect(w, r, to)
		}
		if held, ok := r.Context().Value(sessionHeld{}).(*store.Session); ok {
			*held = s
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
		if r.Method == http.MethodGet {
			f, err := h.takeFlash(r.Context(), h.sessionSecret(r), r.URL.Path)
			if err != nil {
				return err
			}
			return fn(w, r.WithContext(context.WithValue(r.Context(), flashKey{}, f)), s)
		}
		if r.Method != http.MethodHead {
			if err := r.ParseForm(); err != nil {
				return formError(err)
			}
			if !sameToken(r.PostForm.Get("csrf"), s.CSRFToken) {
				return &httpError{Code: http.StatusForbidden, Msg: "This form has expired or did not come from this portal, so it was refused. Go back, reload the page and try again."}
			}
			if r.PostForm.Has("form") {
				return h.once(w, r, s, fn)
			}
		}
		return fn(w, r, s)
	}
}

// currentSession reads the session cookie and returns its unexpired
// session, moving the idle expiry forward.
func (h *handler) currentSession(r *http.Request) (store.Session, bool, error) {
	c, err := r.Cookie(h.cookieName(r, sessionCookie))
	if err != nil || c.Value == "" {
		return store.Session{}, false, nil
	}
	s, err := h.store.SessionByHash(r.Context(), hashID(c.Value))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, err
	}
	if now := h.now(); now.Sub(s.SeenAt) >= touchEvery {
		exp := expiry(s.CreatedAt, now)
		err := h.store.TouchSession(r.Context(), s.IDHash, now, exp)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return store.Session{}, false, nil // signed out meanwhile
		case errors.Is(err, store.ErrStorageFull):
			// The page is read all the same; the expiry moves at a request
			// once space is back (it is hours away), and a change the page
			// makes is answered 503 by itself.
			return s, true, nil
		case err != nil:
			return store.Session{}, false, err
		}
		s.SeenAt, s.ExpiresAt = now, exp
	}
	return s, true, nil
}

// expiry is when a session created at created and used at now ends.
func expiry(created, now time.Time) time.Time {
	idle, hard := now.Add(idleTimeout), created.Add(maxLifetime)
	if idle.Before(hard) {
		return idle
	}
	return hard
}

// startSession signs an owner in: a new random session id in the cookie, its
// hash in the store; it returns the id, which seals the session's flashes. A new id at every sign-in means an id planted before
// sign-in is worth nothing after it.
func (h *handler) startSession(w http.ResponseWriter, r *http.Request, o store.Person) (string, error) {
	id, now := randomToken(), h.now()
	s := store.Session{IDHash: hashID(id), AccountID: o.AccountID, OwnerID: o.ID, CSRFToken: randomToken(),
		CreatedAt: now, SeenAt: now, ExpiresAt: expiry(now, now)}
	if err := h.store.CreateSession(r.Context(), s); err != nil {
		return "", err
	}
	h.setCookie(w, r, sessionCookie, id, now.Add(maxLifetime))
	return id, nil
}

// Cookies. Over TLS (or with SecureCookies) they are Secure and carry the
// __Host- prefix, which a browser keeps only for this exact host and path.
const (
	sessionCookie = "herald_session"
	signInCookie  = "herald_signin" // the sign-in form's CSRF token, before any session
)

func (h *handler) isSecure(r *http.Request) bool { return h.secure || r.TLS != nil }

func (h *handler) cookieName(r *http.Request, name string) string {
	if h.isSecure(r) {
		return "__Host-" + name
	}
	return name
}

func (h *handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r, name), Value: value, Path: "/", Expires: expires,
		HttpOnly: true, Secure: h.isSecure(r), SameSite: http.SameSiteLaxMode})
}

func (h *handler) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r, name), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: h.isSecure(r), SameSite: http.SameSiteLaxMode})
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashID is the stored form of a session id.
func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// sameToken compares a submitted token with the expected one in constant
// time; an empty token never matches.
func sameToken(got, want string) bool {
	return got != "" && len(got) == len(want) && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
