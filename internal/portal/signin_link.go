package portal

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// A link's token arrives in the URL, and opening the URL changes nothing:
// mail scanners and chat previews fetch links before people do, so a GET
// that used the link up would spend it on a robot. The page asks for one
// click, a POST, which uses it. Like every form of the portal, that POST
// answers with a redirect (303): to the account's webhooks once signed in,
// to the sign-in page when the link is gone, or back to the link's page with
// what to correct, in a flash sealed for the browser's sign-in cookie.

type linkData struct {
	Link   store.Link
	Token  string // the link's own token, sent back by the form
	CSRF   string // the sign-in form's CSRF token
	Errors fieldErrors
}

// goneMsg is what a link that is unknown, used or expired says.
const goneMsg = "This link has been used or has expired. Ask for a new one."

// goneLink answers the page of a link that is unknown, used or expired.
var goneLink = &httpError{Code: http.StatusNotFound, Msg: goneMsg}

// toSignIn answers a link's form that cannot go on: to the sign-in page,
// answering status, with why (and the email, when the person has one).
func (h *handler) toSignIn(w http.ResponseWriter, r *http.Request, status int, email, msg string) error {
	f := flash{Status: status, Errors: fieldErrors{"": msg}}
	if email != "" {
		f.Form = url.Values{"email": {email}}
	}
	if err := h.addFlash(r.Context(), r.PostForm.Get("csrf"), "/signin", f); err != nil {
		return err
	}
	return redirect(w, r, "/signin")
}

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
		return h.toSignIn(w, r, http.StatusNotFound, "", goneMsg)
	}
	if err != nil {
		return err
	}
	if _, err := h.startSession(w, r, o); err != nil {
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

// invitationPage shows the form where an invited person chooses a password;
// a refused form arrives as a flash with its errors (never the passwords).
func (h *handler) invitationPage(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	l, err := h.store.LinkByHash(r.Context(), store.LinkInvitation, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return goneLink
	}
	if err != nil {
		return err
	}
	d := linkData{Link: l, Token: token, CSRF: h.signInToken(w, r)}
	f, err := h.takeFlash(r.Context(), d.CSRF, "/invitation")
	if err != nil {
		return err
	}
	d.Errors = f.Errors
	return h.render(w, r.WithContext(context.WithValue(r.Context(), flashKey{}, flash{Status: f.Status})), http.StatusOK, "invitation", d)
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
		return h.toSignIn(w, r, http.StatusNotFound, "", goneMsg)
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
		// Back to the link's page, which the browser opened with its
		// token already: the passwords are typed again, never kept.
		if err := h.addFlash(r.Context(), d.CSRF, "/invitation", flash{Status: http.StatusUnprocessableEntity, Errors: d.Errors}); err != nil {
			return err
		}
		return redirect(w, r, withQuery("/invitation", "token", token))
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return err
	}
	o, err := h.store.AcceptInvitation(r.Context(), auth.HashToken(token), hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return h.toSignIn(w, r, http.StatusNotFound, "", goneMsg)
	case errors.Is(err, store.ErrConflict):
		return h.toSignIn(w, r, http.StatusConflict, l.Email, l.Email+" already signs in to herald. Sign in with that account's password instead.")
	case err != nil:
		return err
	}
	if _, err := h.startSession(w, r, o); err != nil {
		return err
	}
	h.clearCookie(w, r, signInCookie)
	return redirect(w, r, "/webhooks")
}
