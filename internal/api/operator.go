package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/accounts"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// operator serves /v3/operator/: the calls of whoever runs herald, across
// accounts. They take the operator token alone, never an account's API
// token, and no account's call takes the operator token (it is in no
// account's api_tokens). With no operator token configured every operator
// route answers 404, as if it did not exist.
func (a *API) operator() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.operatorHash == "" {
			a.writeError(w, r, problem(http.StatusNotFound, "not-found", "Not found",
				"the operator API is off: start herald with --operator-token to turn it on"))
			return
		}
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || !auth.SameToken(a.operatorHash, strings.TrimSpace(token)) {
			if !a.allow(w, r, a.limits.ByAddress(r), "address") {
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			a.writeError(w, r, problem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
				"the operator calls take the operator token (--operator-token) as Authorization: Bearer <token>"))
			return
		}
		if !a.allow(w, r, a.limits.ByCredential(a.operatorHash), "operator token") {
			return
		}
		a.operatorMux.ServeHTTP(w, r)
	})
}

func (a *API) operatorRoutes(h func(pattern string, fn handler)) {
	h("POST /v3/operator/accounts", a.createAccount)
	h("GET /v3/operator/accounts", a.listAccounts)
	h("PATCH /v3/operator/accounts/{id}", a.setAccountLimits)
	h("DELETE /v3/operator/accounts/{id}", a.deleteAccount)
	h("POST /v3/operator/accounts/{id}/portal-link", a.createPortalLink)
}

type createdAccountJSON struct {
	Account       accountJSON `json:"account"`
	APIToken      string      `json:"apiToken"`
	OwnerPassword string      `json:"ownerPassword"`
}

func (a *API) createAccount(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name              *string `json:"name"`
		OwnerEmail        *string `json:"ownerEmail"`
		NotificationEmail *string `json:"notificationEmail"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	var ve validator.Errors
	for _, f := range []struct {
		name  string
		value *string
		check func(*validator.Errors, string, *string)
	}{{"name", in.Name, validator.CheckAccountName}, {"ownerEmail", in.OwnerEmail, validator.CheckEmail}} {
		if f.value == nil {
			ve.Add(f.name, "is required")
		} else {
			f.check(&ve, f.name, f.value)
		}
	}
	notify := ""
	if in.NotificationEmail != nil {
		validator.CheckEmail(&ve, "notificationEmail", in.NotificationEmail)
		notify = *in.NotificationEmail
	}
	if err := invalid(ve); err != nil {
		return err
	}
	c, err := accounts.Create(r.Context(), a.store, accounts.New{Name: *in.Name, OwnerEmail: *in.OwnerEmail, NotificationEmail: notify})
	if errors.Is(err, store.ErrConflict) {
		return &Problem{Type: problemBase + "conflict", Title: "Conflict", Status: http.StatusConflict,
			Detail: "ownerEmail: " + *in.OwnerEmail + " already signs in to herald; an address belongs to one account",
			Errors: Invalid{{"ownerEmail", "already signs in to herald"}}}
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, createdAccountJSON{Account: toAccountJSON(c.Account), APIToken: c.APIToken, OwnerPassword: c.OwnerPassword})
}

func (a *API) listAccounts(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	accts, next, err := a.store.Accounts(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]accountJSON, len(accts))
	for i, acct := range accts {
		out[i] = toAccountJSON(acct)
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) deleteAccount(w http.ResponseWriter, r *http.Request) error {
	err := a.store.DeleteAccount(r.Context(), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("account")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type portalLinkJSON struct {
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
}

func (a *API) createPortalLink(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		TTLSeconds *int64 `json:"ttlSeconds"`
	}
	if err := decode(w, r, &in, true); err != nil {
		return err
	}
	ttl := accounts.DefaultPortalLinkTTL
	if in.TTLSeconds != nil {
		ttl = time.Duration(*in.TTLSeconds) * time.Second
		if *in.TTLSeconds < int64(accounts.MinPortalLinkTTL/time.Second) || *in.TTLSeconds > int64(accounts.MaxPortalLinkTTL/time.Second) {
			return Invalid{{"ttlSeconds", "must be from 10 to 3600 seconds"}}.Err()
		}
	}
	link, err := accounts.NewPortalLink(r.Context(), a.store, pathID(r, "id"), ttl, a.baseURL(r))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("account")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, portalLinkJSON{URL: link.URL, ExpiresAt: ts(link.ExpiresAt)})
}

// baseURL is the portal's address for links: --public-url when set, else
// the address this request came to.
func (a *API) baseURL(r *http.Request) string {
	if a.publicURL != "" {
		return a.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// invalid turns validator errors into a 422 problem, or nil.
func invalid(ve validator.Errors) error {
	var v Invalid
	for _, e := range ve {
		v.Add(e.Field, e.Detail)
	}
	return v.Err()
}
