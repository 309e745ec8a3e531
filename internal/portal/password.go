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

// passwordPage shows the form that changes the signed-in user's password.
func (h *handler) passwordPage(w http.ResponseWriter, r *http.Request, s store.Session) error {
	return h.render(w, r, http.StatusOK, "password", passwordData{})
}

// changePassword sets a new password once the current one is proven, and
// ends every other session of the user: whoever else knew the old password
// is signed out everywhere, and this browser stays signed in.
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
		return h.render(w, r, http.StatusUnprocessableEntity, "password", d)
	}
	// Wrong guesses count against the sign-in limits, so a session left
	// open cannot be used to find the password.
	addr := h.limits.Proxies.ClientAddr(r)
	if wait, err := h.limiter.take(r.Context(), s.OwnerEmail, addr, true); err != nil {
		return err
	} else if wait > 0 {
		d.Errors.add("current", "Too many wrong passwords. Try again later.")
		return h.render(w, r, http.StatusTooManyRequests, "password", d)
	}
	_, ok, err := h.checkPassword(r, s.OwnerEmail, current)
	if err != nil {
		return err
	}
	if !ok {
		d.Errors.add("current", "This is not your current password.")
		return h.render(w, r, http.StatusUnprocessableEntity, "password", d)
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
	return redirect(w, r, "/account?done=password")
}
