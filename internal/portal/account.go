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
	// Emails are the latest notification emails; EmailsKept says herald
	// has no SMTP server, so none of them was sent.
	Emails     []store.Email
	MoreEmails bool
	EmailsKept bool
}

// emailsShown is how many of the latest emails Settings shows.
const emailsShown = 20

// account shows the account's settings: its name and the notification email
// that hears when a webhook is suspended.
func (h *handler) account(w http.ResponseWriter, r *http.Request, s store.Session) error {
	a, err := h.store.Account(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	d := accountData{Name: a.Name, NotificationEmail: a.NotificationEmail, OwnerEmail: s.OwnerEmail, EmailsKept: h.emailsKept}
	emails, more, err := h.store.AccountEmails(r.Context(), s.AccountID, store.Page{Limit: emailsShown})
	if err != nil {
		return err
	}
	d.Emails, d.MoreEmails = emails, more != ""
	if f := flashFrom(r.Context()); f.Form != nil {
		d.Name, d.NotificationEmail, d.Errors = f.Form.Get("name"), f.Form.Get("notificationEmail"), f.Errors
	}
	return h.render(w, r, http.StatusOK, "account", d)
}

// saveAccount saves the settings with the API's rules.
func (h *handler) saveAccount(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := accountData{Name: r.PostForm.Get("name"), NotificationEmail: r.PostForm.Get("notificationEmail"), OwnerEmail: s.OwnerEmail}
	var v validator.Errors
	validator.CheckAccountName(&v, "name", &d.Name)
	validator.CheckEmail(&v, "notificationEmail", &d.NotificationEmail)
	if errs := fromValidator(v); len(errs) > 0 {
		return h.refused(w, r, "/account", errs)
	}
	if _, err := h.store.UpdateAccount(r.Context(), s.AccountID, store.AccountPatch{Name: &d.Name, NotificationEmail: &d.NotificationEmail}); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/account", flash{Notice: "Settings saved."})
}
