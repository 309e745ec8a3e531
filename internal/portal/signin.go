package portal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// dummyHash is an argon2id hash of a password nobody knows, with the same
// parameters as real ones. Signing in as an unknown email checks against it,
// so that answer takes as long as a wrong password for a real owner and does
// not tell which emails have an account.
const dummyHash = "$argon2id$v=19$m=65536,t=3,p=2$e7BcKfkwB/ZohBzh2B84xg$ldIVr+CuMvokib+qzWU7ncMr+JVkRS8mJE5IvNdlMHE"

type signInData struct {
	Email  string
	Next   string
	Token  string // the sign-in form's CSRF token
	Notice string
	Errors fieldErrors
}

// signInPage shows the sign-in form; a signed-in owner goes straight on.
// What the last sign-in or sign-out said waits here as a flash of the
// browser's sign-in cookie.
func (h *handler) signInPage(w http.ResponseWriter, r *http.Request) error {
	next := localPath(r.URL.Query().Get("next"), "/webhooks")
	if _, ok, err := h.currentSession(r); err != nil {
		return err
	} else if ok {
		return redirect(w, r, next)
	}
	d := signInData{Next: next, Token: h.signInToken(w, r)}
	f, err := h.takeFlash(r.Context(), d.Token, "/signin")
	if err != nil {
		return err
	}
	d.Notice, d.Errors = f.Notice, f.Errors
	if f.Form != nil {
		d.Email = f.Form.Get("email")
	}
	return h.render(w, r.WithContext(context.WithValue(r.Context(), flashKey{}, flash{Status: f.Status})), http.StatusOK, "signin", d)
}

// signInToken returns the CSRF token of the sign-in form, kept in a cookie
// until the owner signs in (a double-submit token: a page of another site
// can neither read the cookie nor set the field). It is also the secret
// that seals the browser's flashes before sign-in.
func (h *handler) signInToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(h.cookieName(r, signInCookie)); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	tok := randomToken()
	h.setCookie(w, r, signInCookie, tok, h.now().Add(24*time.Hour))
	return tok
}

// signIn checks the owner's email and password and starts a session. A
// refusal goes back to the sign-in page with the email (never the
// password), so Back and refresh never post the password again.
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	c, err := r.Cookie(h.cookieName(r, signInCookie))
	if err != nil || !sameToken(r.PostForm.Get("csrf"), c.Value) {
		return &httpError{Code: http.StatusForbidden, Msg: "This sign-in form has expired or did not come from this portal. Reload the sign-in page and try again."}
	}
	d := signInData{Email: strings.TrimSpace(r.PostForm.Get("email")), Next: localPath(r.PostForm.Get("next"), "/webhooks"), Token: c.Value}
	refuse := func(status int) error {
		f := flash{Status: status, Errors: d.Errors, Form: url.Values{"email": {d.Email}}}
		if err := h.addFlash(r.Context(), c.Value, "/signin", f); err != nil {
			return err
		}
		return redirect(w, r, withQuery("/signin", "next", d.Next))
	}
	password := r.PostForm.Get("password")
	if d.Email == "" {
		d.Errors.add("email", "Enter your email address.")
	}
	if password == "" {
		d.Errors.add("password", "Enter your password.")
	}
	if len(d.Errors) > 0 {
		return refuse(http.StatusUnprocessableEntity)
	}
	if validator.SingleLine(d.Email) != "" {
		// No owner has such an email, and PostgreSQL could not look it up.
		d.Email = ""
		d.Errors.add("", "The email address or password is not right.")
		return refuse(http.StatusUnprocessableEntity)
	}
	addr := h.limits.Proxies.ClientAddr(r)
	if wait, err := h.limiter.take(r.Context(), d.Email, addr, h.known(r, d.Email)); err != nil {
		return err
	} else if wait > 0 {
		d.Errors.add("", fmt.Sprintf("Too many failed sign-ins. Try again in %d minutes.", int(math.Ceil(wait.Minutes()))))
		return refuse(http.StatusTooManyRequests)
	}
	owner, ok, err := h.checkPassword(r, d.Email, password)
	if err != nil {
		return err
	}
	if !ok {
		d.Errors.add("", "The email address or password is not right.")
		return refuse(http.StatusUnprocessableEntity)
	}
	if err := h.limiter.succeeded(r.Context(), d.Email, addr); err != nil {
		return err
	}
	h.setCookie(w, r, knownCookie, h.limiter.mark(d.Email), h.now().Add(knownFor))
	id, err := h.startSession(w, r, owner)
	if err != nil {
		return err
	}
	if err := h.moveFlashes(r.Context(), c.Value, id); err != nil {
		return err
	}
	h.clearCookie(w, r, signInCookie)
	return redirect(w, r, d.Next)
}

// checkPassword finds the owner and checks the password, spending the same
// time whether or not the owner exists.
func (h *handler) checkPassword(r *http.Request, email, password string) (store.Person, bool, error) {
	select {
	case h.hashing <- struct{}{}:
		defer func() { <-h.hashing }()
	case <-r.Context().Done():
		return store.Person{}, false, r.Context().Err()
	}
	owner, err := h.store.PersonByEmail(r.Context(), email)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Person{}, false, err
	}
	hash := dummyHash
	if found {
		hash = owner.PasswordHash
	}
	ok := auth.CheckPassword(hash, password)
	return owner, ok && found, nil
}

// signOut ends the session.
func (h *handler) signOut(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := h.store.DeleteSession(r.Context(), s.IDHash); err != nil {
		return err
	}
	h.clearCookie(w, r, sessionCookie)
	if err := h.addFlash(r.Context(), h.signInToken(w, r), "/signin", flash{Notice: "You have signed out."}); err != nil {
		return err
	}
	return redirect(w, r, "/signin")
}
