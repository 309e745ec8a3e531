package portal

import (
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// tokenLifetimes are the expiries the form offers, in days; "" is never.
// The API takes any future time; the portal offers the common choices.
var tokenLifetimes = []string{"", "7", "30", "90", "365"}

type apiTokensData struct {
	Tokens    []store.APIToken
	Next      string
	Now       time.Time
	Lifetimes []string
	// The form's values, and what is wrong with them.
	Name, Scope, Expires string
	Errors               fieldErrors
	// Created is the token just created, with its secret: shown this once.
	Created *store.APIToken
	Secret  string
}

// apiTokens lists the account's API tokens with a form to create one.
// A token just created, or a refused form, arrives as a flash.
func (h *handler) apiTokens(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := apiTokensData{Scope: string(store.ScopeRead)}
	f := flashFrom(r.Context())
	if f.Form != nil {
		d.Name, d.Scope, d.Expires, d.Errors = f.Form.Get("name"), f.Form.Get("scope"), f.Form.Get("expires"), f.Errors
	}
	d.Created, d.Secret = f.Created, f.Secret
	return h.renderAPITokens(w, r, s, http.StatusOK, d)
}

func (h *handler) renderAPITokens(w http.ResponseWriter, r *http.Request, s store.Session, status int, d apiTokensData) error {
	p := store.Page{Limit: 100, Cursor: r.URL.Query().Get("cursor")}
	toks, next, err := h.store.APITokens(r.Context(), s.AccountID, p)
	if err != nil {
		return err
	}
	d.Tokens, d.Now, d.Lifetimes = toks, h.now(), tokenLifetimes
	if next != "" {
		d.Next = "/account/api-tokens?cursor=" + next
	}
	return h.render(w, r, status, "api_tokens", d)
}

// createAPIToken creates a token with the API's rules and shows its secret
// on the tokens page, the only time herald can show it: the secret crosses
// the redirect in a flash sealed for this browser's session (never a URL),
// and the page shows it once.
func (h *handler) createAPIToken(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := apiTokensData{Name: r.PostForm.Get("name"), Scope: r.PostForm.Get("scope"), Expires: r.PostForm.Get("expires")}
	var v validator.Errors
	validator.CheckTokenName(&v, "name", &d.Name)
	validator.CheckScope(&v, "scope", d.Scope)
	var expires *time.Time
	if days, err := strconv.Atoi(d.Expires); d.Expires != "" && (err != nil || !validLifetime(d.Expires)) {
		v.Add("expires", "must be one of the choices offered")
	} else if d.Expires != "" {
		t := h.now().AddDate(0, 0, days)
		expires = &t
	}
	if errs := fromValidator(v); len(errs) > 0 {
		return h.refused(w, r, "/account/api-tokens", errs)
	}
	secret := auth.NewAPIToken()
	tok, err := h.store.CreateAPIToken(r.Context(), s.AccountID, store.NewAPIToken{
		Name: d.Name, Scope: store.Scope(d.Scope), Hash: auth.HashToken(secret), ExpiresAt: expires, CreatedBy: s.OwnerID})
	if err != nil {
		return err
	}
	return h.redirectWith(w, r, "/account/api-tokens", flash{Created: &tok, Secret: secret})
}

func validLifetime(days string) bool {
	for _, l := range tokenLifetimes {
		if l != "" && l == days {
			return true
		}
	}
	return false
}

// revokeAPIToken revokes one of the account's tokens; every process refuses
// it from then on.
func (h *handler) revokeAPIToken(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := h.store.RevokeAPIToken(r.Context(), s.AccountID, r.PathValue("id")); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/account/api-tokens", flash{Notice: "API token revoked. Requests that carry it now answer 401."})
}
