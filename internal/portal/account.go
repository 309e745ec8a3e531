package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type accountData struct {
	Name              string
	NotificationEmail string
	OwnerEmail        string
	Errors            fieldErrors
}

// account shows the account's settings: its name and the notification email
// that hears when a webhook is suspended.
func (h *handler) account(w http.ResponseWriter, r *http.Request, s store.Session) error {
	a, err := h.store.Account(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	return h.render(w, r, http.StatusOK, "account", accountData{Name: a.Name, NotificationEmail: a.NotificationEmail, OwnerEmail: s.OwnerEmail})
}

// saveAccount saves the settings with the API's rules.
func (h *handler) saveAccount(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := accountData{Name: r.PostForm.Get("name"), NotificationEmail: r.PostForm.Get("notificationEmail"), OwnerEmail: s.OwnerEmail}
	var v validator.Errors
	validator.CheckAccountName(&v, "name", &d.Name)
	validator.CheckEmail(&v, "notificationEmail", &d.NotificationEmail)
	if d.Errors = fromValidator(v); len(d.Errors) > 0 {
		return h.render(w, r, http.StatusUnprocessableEntity, "account", d)
	}
	if _, err := h.store.UpdateAccount(r.Context(), s.AccountID, store.AccountPatch{Name: &d.Name, NotificationEmail: &d.NotificationEmail}); err != nil {
		return err
	}
	return redirect(w, r, "/account?done=account")
}
