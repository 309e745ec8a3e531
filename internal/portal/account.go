package portal

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type accountData struct {
	Name              string
	NotificationEmail string
	OwnerEmail        string
	Errors            fieldErrors
	// LeadHours is the lead time of license.expiring-soon in hours, as
	// typed (the API's seconds / 3600: 168 is 7 days, 1.5 is 5400 s).
	LeadHours string
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
	d := accountData{Name: a.Name, NotificationEmail: a.NotificationEmail, LeadHours: hours(a.ExpiringSoonLead), OwnerEmail: s.OwnerEmail, EmailsKept: h.emailsKept}
	emails, more, err := h.store.AccountEmails(r.Context(), s.AccountID, store.Page{Limit: emailsShown})
	if err != nil {
		return err
	}
	d.Emails, d.MoreEmails = emails, more != ""
	if f := flashFrom(r.Context()); f.Form != nil {
		d.Name, d.NotificationEmail, d.Errors = f.Form.Get("name"), f.Form.Get("notificationEmail"), f.Errors
		if f.Form.Has("expiringSoonLeadHours") {
			d.LeadHours = f.Form.Get("expiringSoonLeadHours")
		}
	}
	return h.render(w, r, http.StatusOK, "account", d)
}

// saveAccount saves the settings with the API's rules.
func (h *handler) saveAccount(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := accountData{Name: r.PostForm.Get("name"), NotificationEmail: r.PostForm.Get("notificationEmail"),
		LeadHours: r.PostForm.Get("expiringSoonLeadHours"), OwnerEmail: s.OwnerEmail}
	var v validator.Errors
	validator.CheckAccountName(&v, "name", &d.Name)
	validator.CheckEmail(&v, "notificationEmail", &d.NotificationEmail)
	// A form without the field (one made before it existed) keeps the
	// lead time as it is.
	var lead *int64
	if r.PostForm.Has("expiringSoonLeadHours") {
		sec, ok := seconds(d.LeadHours)
		if ok {
			var lv validator.Errors
			if validator.CheckExpiringSoonLead(&lv, "expiringSoonLeadHours", sec); len(lv) > 0 {
				ok = false
			}
		}
		if !ok {
			v.Add("expiringSoonLeadHours", "must be a number of hours from 1 to 2160 (90 days)")
		}
		lead = &sec
	}
	if errs := fromValidator(v); len(errs) > 0 {
		return h.refused(w, r, "/account", errs)
	}
	if _, err := h.store.UpdateAccount(r.Context(), s.AccountID, store.AccountPatch{Name: &d.Name, NotificationEmail: &d.NotificationEmail,
		ExpiringSoonLead: lead}); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/account", flash{Notice: "Settings saved."})
}

// hours writes a lead time in seconds as hours, as short as it is exact.
func hours(seconds int64) string {
	return strconv.FormatFloat(float64(seconds)/3600, 'f', -1, 64)
}

// seconds reads a lead time typed in hours (a decimal point allowed) as
// whole seconds.
func seconds(hours string) (int64, bool) {
	h, err := strconv.ParseFloat(strings.TrimSpace(hours), 64)
	if err != nil || math.IsNaN(h) || math.IsInf(h, 0) || h < 0 || h > 1e6 {
		return 0, false
	}
	return int64(math.Round(h * 3600)), true
}
