package portal

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// A link's token arrives in the URL, and opening the URL changes nothing:
// mail scanners and chat previews fetch links before people do, so a GET
// that used the link up would spend it on a robot. The page asks for one
// click, a POST, which uses it.

type linkData struct {
	Link   store.Link
	Token  string // the link's own token, sent back by the form
	CSRF   string // the sign-in form's CSRF token
	Errors fieldErrors
}

// goneLink answers a link that is unknown, used or expired.
var goneLink = &httpError{Code: http.StatusNotFound, Msg: "This link has been used or has expired. Ask for a new one."}

// portalLinkPage shows the button that signs in with an operator's link.
func (h *handler) portalLinkPage(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	l, err := h.store.LinkByHash(r.Context(), store.LinkPortal, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return goneLink
	}
	if err != nil {
		return err
	}
	return h.render(w, r, http.StatusOK, "signin_link", linkData{Link: l, Token: token, CSRF: h.signInToken(w, r)})
}

// portalLinkSignIn uses the link up and signs in as the account's first
// owner.
func (h *handler) portalLinkSignIn(w http.ResponseWriter, r *http.Request) error {
	if err := h.checkSignInForm(r); err != nil {
		return err
	}
	o, err := h.store.UsePortalLink(r.Context(), auth.HashToken(r.PostForm.Get("token")))
	if errors.Is(err, store.ErrNotFound) {
		return goneLink
	}
	if err != nil {
		return err
	}
	if err := h.startSession(w, r, o); err != nil {
		return err
	}
	h.clearCookie(w, r, signInCookie)
	return redirect(w, r, "/webhooks")
}

// checkSignInForm parses a form posted before any session and checks its
// double-submit CSRF token.
func (h *handler) checkSignInForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	c, err := r.Cookie(h.cookieName(r, signInCookie))
	if err != nil || !sameToken(r.PostForm.Get("csrf"), c.Value) {
		return &httpError{Code: http.StatusForbidden, Msg: "This form has expired or did not come from this portal. Open the link again and retry."}
	}
	return nil
}

// invitationPage shows the form where an invited person chooses a password.
func (h *handler) invitationPage(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	l, err := h.store.LinkByHash(r.Context(), store.LinkInvitation, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return goneLink
	}
	if err != nil {
		return err
	}
	return h.render(w, r, http.StatusOK, "invitation", linkData{Link: l, Token: token, CSRF: h.signInToken(w, r)})
}

// acceptInvitation creates the invited user with the password chosen, uses
// the invitation up and signs them in.
func (h *handler) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	if err := h.checkSignInForm(r); err != nil {
		return err
	}
	token, password := r.PostForm.Get("token"), r.PostForm.Get("password")
	l, err := h.store.LinkByHash(r.Context(), store.LinkInvitation, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return goneLink
	}
	if err != nil {
		return err
	}
	d := linkData{Link: l, Token: token, CSRF: r.PostForm.Get("csrf")}
	var v validator.Errors
	validator.CheckPassword(&v, "password", password)
	d.Errors = fromValidator(v)
	if password != r.PostForm.Get("confirm") {
		d.Errors.add("confirm", "The two passwords differ.")
	}
	if len(d.Errors) > 0 {
		return h.render(w, r, http.StatusUnprocessableEntity, "invitation", d)
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return err
	}
	o, err := h.store.AcceptInvitation(r.Context(), auth.HashToken(token), hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return goneLink
	case errors.Is(err, store.ErrConflict):
		return &httpError{Code: http.StatusConflict, Msg: l.Email + " already signs in to herald. Sign in with that account's password instead."}
	case err != nil:
		return err
	}
	if err := h.startSession(w, r, o); err != nil {
		return err
	}
	h.clearCookie(w, r, signInCookie)
	return redirect(w, r, "/webhooks")
}
