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
func (h *handler) apiTokens(w http.ResponseWriter, r *http.Request, s store.Session) error {
	return h.renderAPITokens(w, r, s, http.StatusOK, apiTokensData{Scope: string(store.ScopeRead)})
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
// on the page it answers (a POST's answer, never a URL), the only time
// herald can show it.
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
	if d.Errors = fromValidator(v); len(d.Errors) > 0 {
		return h.renderAPITokens(w, r, s, http.StatusUnprocessableEntity, d)
	}
	secret := auth.NewAPIToken()
	tok, err := h.store.CreateAPIToken(r.Context(), s.AccountID, store.NewAPIToken{
		Name: d.Name, Scope: store.Scope(d.Scope), Hash: auth.HashToken(secret), ExpiresAt: expires})
	if err != nil {
		return err
	}
	return h.renderAPITokens(w, r, s, http.StatusCreated, apiTokensData{Scope: string(store.ScopeRead), Created: &tok, Secret: secret})
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
	return redirect(w, r, "/account/api-tokens?done=token-revoked")
}
