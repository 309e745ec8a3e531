package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type apiTokenJSON struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Scope      store.Scope `json:"scope"`
	ExpiresAt  *string     `json:"expiresAt"`
	LastUsedAt *string     `json:"lastUsedAt"`
	CreatedAt  string      `json:"createdAt"`
	// CreatedBy is the person who made it (through the portal, or through
	// the API with a token they made); null when not recorded (a token
	// made before herald recorded it). Removing the person revokes it.
	CreatedBy *personJSON `json:"createdBy"`
	// Token is the secret, in the create answer only: herald keeps its
	// hash, so nothing can show it again.
	Token string `json:"token,omitempty"`
}

// personJSON names a person of the account: a portal user.
type personJSON struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

func toAPITokenJSON(t store.APIToken) apiTokenJSON {
	out := apiTokenJSON{ID: t.ID, Name: t.Name, Scope: t.Scope, ExpiresAt: optTS(t.ExpiresAt),
		LastUsedAt: optTS(t.LastUsedAt), CreatedAt: ts(t.CreatedAt)}
	if t.CreatedBy != "" {
		out.CreatedBy = &personJSON{ID: t.CreatedBy, Email: t.CreatedByEmail}
	}
	return out
}

func (a *API) createAPIToken(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name      *string `json:"name"`
		Scope     *string `json:"scope"`
		ExpiresAt *string `json:"expiresAt"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	var ve validator.Errors
	if in.Name == nil {
		ve.Add("name", "is required")
	} else {
		validator.CheckTokenName(&ve, "name", in.Name)
	}
	if in.Scope == nil {
		ve.Add("scope", "is required")
	} else {
		validator.CheckScope(&ve, "scope", *in.Scope)
	}
	var expires *time.Time
	if in.ExpiresAt != nil {
		// The store's clock decides expiry, so it decides "future" too.
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		switch {
		case err != nil:
			ve.Add("expiresAt", "must be an RFC 3339 time such as 2027-11-21T08:07:13.120Z")
		case !t.After(a.store.Now()):
			ve.Add("expiresAt", "must be in the future")
		default:
			t = store.FromMS(store.MS(t))
			expires = &t
		}
	}
	var v Invalid
	for _, e := range ve {
		v.Add(e.Field, e.Detail)
	}
	if err := v.Err(); err != nil {
		return err
	}
	secret := auth.NewAPIToken()
	tok, err := a.store.CreateAPIToken(r.Context(), accountID(r), store.NewAPIToken{
		Name: *in.Name, Scope: store.Scope(*in.Scope), Hash: auth.HashToken(secret), ExpiresAt: expires, CreatedBy: tokenMaker(r)})
	if err != nil {
		return err
	}
	out := toAPITokenJSON(tok)
	out.Token = secret
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, out)
}

func (a *API) listAPITokens(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	toks, next, err := a.store.APITokens(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	out := make([]apiTokenJSON, len(toks))
	for i, t := range toks {
		out[i] = toAPITokenJSON(t)
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

// deleteAPIToken revokes a token, the one making the call included: a
// token known to have leaked can revoke itself, and the portal can always
// create another.
func (a *API) deleteAPIToken(w http.ResponseWriter, r *http.Request) error {
	err := a.store.RevokeAPIToken(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("API token")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
