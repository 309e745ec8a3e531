package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/store"
)

// signingKeyJSON is one ed25519 webhook's public keys.
type signingKeyJSON struct {
	WebhookID string `json:"webhookId"`
	PublicKey string `json:"publicKey"`
	// NextPublicKey, during a rotation, signs beside PublicKey until the
	// rotation ends, when it replaces it.
	NextPublicKey string `json:"nextPublicKey,omitempty"`
}

// listSigningKeys answers the public keys of every ed25519 webhook of the
// account named by ?account= (its id, as GET /v3/account shows it). It
// needs no token (decision 0125): a public key verifies signatures and
// signs nothing, and a receiver that fetches it holds no credential.
func (a *API) listSigningKeys(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimSpace(r.URL.Query().Get("account"))
	if id == "" {
		return Invalid{{"account", "is required: the account's id, as GET /v3/account shows it"}}.Err()
	}
	if _, err := a.store.Account(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		return notFound("account")
	} else if err != nil {
		return err
	}
	keys, err := a.store.SigningKeys(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]signingKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = signingKeyJSON{WebhookID: k.WebhookID, PublicKey: k.PublicKey, NextPublicKey: k.NextPublicKey}
	}
	// Short: a rotation finished early switches keys at once, and a
	// receiver refetches on a signature no cached key verifies.
	w.Header().Set("Cache-Control", "public, max-age=60")
	return writeJSON(w, http.StatusOK, map[string]any{"data": out})
}
