package api

import (
	"net/http"
	"net/mail"
	"strings"

	"github.com/heraldhq/herald/internal/store"
)

type accountJSON struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	NotificationEmail string `json:"notificationEmail"`
	CreatedAt         string `json:"createdAt"`
	UpdatedAt         string `json:"updatedAt"`
}

func toAccountJSON(a store.Account) accountJSON {
	return accountJSON{a.ID, a.Name, a.NotificationEmail, ts(a.CreatedAt), ts(a.UpdatedAt)}
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
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	var v Invalid
	if in.Name == nil && in.NotificationEmail == nil {
		return Invalid{{"body", "send name or notificationEmail"}}.Err()
	}
	if in.Name != nil {
		if *in.Name = strings.TrimSpace(*in.Name); *in.Name == "" || len(*in.Name) > 200 {
			v.Add("name", "must be 1 to 200 characters")
		}
	}
	if in.NotificationEmail != nil {
		*in.NotificationEmail = strings.TrimSpace(*in.NotificationEmail)
		if !ValidEmail(*in.NotificationEmail) {
			v.Add("notificationEmail", "must be an email address such as ops@example.com")
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	acct, err := a.store.UpdateAccount(r.Context(), accountID(r), store.AccountPatch{Name: in.Name, NotificationEmail: in.NotificationEmail})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAccountJSON(acct))
}

// ValidEmail reports whether s is a bare address (no display name).
func ValidEmail(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Address == s && strings.Contains(s, "@")
}
