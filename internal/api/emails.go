package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
)

// emailJSON is a notification email as the account reads it back: sent,
// kept (herald has no SMTP server, or gave up; note says why), or waiting
// in the outbox (note: the last failed send, if any).
type emailJSON struct {
	ID        string  `json:"id"`
	To        string  `json:"to"`
	Subject   string  `json:"subject"`
	Body      string  `json:"body"`
	Status    string  `json:"status"`
	Note      *string `json:"note"`
	CreatedAt string  `json:"createdAt"`
	SentAt    *string `json:"sentAt"`
}

// emailStatus is where an email stands: sent, kept or waiting.
func emailStatus(e store.Email) string {
	switch {
	case e.SentAt == nil:
		return "waiting"
	case e.Error != "":
		return "kept"
	}
	return "sent"
}

func (a *API) listEmails(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	emails, next, err := a.store.AccountEmails(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	out := make([]emailJSON, len(emails))
	for i, e := range emails {
		out[i] = emailJSON{ID: e.ID, To: e.To, Subject: e.Subject, Body: e.Body, Status: emailStatus(e),
			CreatedAt: ts(e.CreatedAt), SentAt: optTS(e.SentAt)}
		if e.Error != "" {
			out[i].Note = &e.Error
		}
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}
