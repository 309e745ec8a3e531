package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type accountJSON struct {
	ID                string     `json:"id"`
	Name              string     `json:"name"`
	NotificationEmail string     `json:"notificationEmail"`
	ExpiringSoonLead  int64      `json:"expiringSoonLeadSeconds"`
	CreatedAt         string     `json:"createdAt"`
	UpdatedAt         string     `json:"updatedAt"`
	Limits            limitsJSON `json:"limits"`
}

// limitsJSON are an account's limits; null is the server-wide default (no
// cap on webhooks; no rate beyond each API token's own).
type limitsJSON struct {
	Webhooks             *int64 `json:"webhooks"`
	APIRequestsPerSecond *int64 `json:"apiRequestsPerSecond"`
}

func toAccountJSON(a store.Account) accountJSON {
	return accountJSON{a.ID, a.Name, a.NotificationEmail, a.ExpiringSoonLead, ts(a.CreatedAt), ts(a.UpdatedAt),
		limitsJSON{a.Limits.Webhooks, a.Limits.APIRequestsPerSecond}}
}

func (a *API) getAccount(w http.ResponseWriter, r *http.Request) error {
	acct, err := a.store.Account(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAccountJSON(acct))
}

func (a *API) updateAccount(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name              *string `json:"name"`
		NotificationEmail *string `json:"notificationEmail"`
		ExpiringSoonLead  *int64  `json:"expiringSoonLeadSeconds"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	if in.Name == nil && in.NotificationEmail == nil && in.ExpiringSoonLead == nil {
		return Invalid{{"body", "send name, notificationEmail or expiringSoonLeadSeconds"}}.Err()
	}
	var ve validator.Errors
	if in.Name != nil {
		validator.CheckAccountName(&ve, "name", in.Name)
	}
	if in.NotificationEmail != nil {
		validator.CheckEmail(&ve, "notificationEmail", in.NotificationEmail)
	}
	if in.ExpiringSoonLead != nil {
		validator.CheckExpiringSoonLead(&ve, "expiringSoonLeadSeconds", *in.ExpiringSoonLead)
	}
	var v Invalid
	for _, e := range ve {
		v.Add(e.Field, e.Detail)
	}
	if err := v.Err(); err != nil {
		return err
	}
	acct, err := a.store.UpdateAccount(r.Context(), accountID(r), store.AccountPatch{Name: in.Name, NotificationEmail: in.NotificationEmail,
		ExpiringSoonLead: in.ExpiringSoonLead})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAccountJSON(acct))
}
