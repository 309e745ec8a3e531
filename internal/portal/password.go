package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type passwordData struct {
	Errors fieldErrors
}

// passwordPage shows the form that changes the signed-in user's password;
// a refused change arrives as a flash with its errors (never the passwords
// typed: they are typed again).
func (h *handler) passwordPage(w http.ResponseWriter, r *http.Request, s store.Session) error {
	return h.render(w, r, http.StatusOK, "password", passwordData{Errors: flashFrom(r.Context()).Errors})
}

// passwordRefused sends the form back with its errors and status; the
// passwords typed stay out of the flash.
func (h *handler) passwordRefused(w http.ResponseWriter, r *http.Request, status int, errs fieldErrors) error {
	return h.redirectWith(w, r, "/account/password", flash{Status: status, Errors: errs})
}

// changePassword sets a new password once the current one is proven, and
// ends every other session of the user: whoever else knew the old password
// is signed out everywhere, and this browser stays signed in (its session,
// which seals its flashes, is the one kept).
func (h *handler) changePassword(w http.ResponseWriter, r *http.Request, s store.Session) error {
	current, next, confirm := r.PostForm.Get("current"), r.PostForm.Get("password"), r.PostForm.Get("confirm")
	var d passwordData
	var v validator.Errors
	validator.CheckPassword(&v, "password", next)
	d.Errors = fromValidator(v)
	if next != confirm {
		d.Errors.add("confirm", "The two new passwords differ.")
	}
	if current == "" {
		d.Errors.add("current", "Enter your current password.")
	}
	if len(d.Errors) > 0 {
		return h.passwordRefused(w, r, http.StatusUnprocessableEntity, d.Errors)
	}
	// Wrong guesses count against the sign-in limits, so a session left
	// open cannot be used to find the password.
	addr := h.limits.Proxies.ClientAddr(r)
	if wait, err := h.limiter.take(r.Context(), s.OwnerEmail, addr, true); err != nil {
		return err
	} else if wait > 0 {
		d.Errors.add("current", "Too many wrong passwords. Try again later.")
		return h.passwordRefused(w, r, http.StatusTooManyRequests, d.Errors)
	}
	_, ok, err := h.checkPassword(r, s.OwnerEmail, current)
	if err != nil {
		return err
	}
	if !ok {
		d.Errors.add("current", "This is not your current password.")
		return h.passwordRefused(w, r, http.StatusUnprocessableEntity, d.Errors)
	}
	if err := h.limiter.succeeded(r.Context(), s.OwnerEmail, addr); err != nil {
		return err
	}
	hash, err := auth.HashPassword(next)
	if err != nil {
		return err
	}
	if err := h.store.ChangePassword(r.Context(), s.AccountID, s.OwnerID, hash, s.IDHash); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/account", flash{Notice: "Password changed. Every other browser signed in as you has been signed out."})
}
