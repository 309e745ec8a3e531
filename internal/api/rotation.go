package api

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type tokenRotationJSON struct {
	StartedAt string `json:"startedAt"`
	EndsAt    string `json:"endsAt"`
	// NextPublicKey, for an ed25519 webhook, is the public key of the next
	// private key, which signs beside the current one until EndsAt.
	NextPublicKey string `json:"nextPublicKey,omitempty"`
}

func toTokenRotationJSON(r *store.TokenRotation, k *store.SigningKey) *tokenRotationJSON {
	if r == nil {
		return nil
	}
	out := &tokenRotationJSON{StartedAt: ts(r.StartedAt), EndsAt: ts(r.EndsAt)}
	if k != nil {
		out.NextPublicKey = k.NextPublicKey
	}
	return out
}

// rotateWebhookToken starts a rotation to a new, generated token. The answer
// is the webhook with its rotation and without a token: the next token is
// read like the token, from GET …/token, so no answer an Idempotency-Key
// keeps holds a secret.
func (a *API) rotateWebhookToken(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		OverlapSeconds *int64 `json:"overlapSeconds"`
	}
	if err := decode(w, r, &in, true); err != nil {
		return err
	}
	overlap := validator.DefaultRotationOverlap
	if in.OverlapSeconds != nil {
		var v validator.Errors
		overlap = validator.CheckRotationOverlap(&v, "overlapSeconds", *in.OverlapSeconds)
		if len(v) > 0 {
			return Invalid{{v[0].Field, v[0].Detail}}.Err()
		}
	}
	// The next token is of the webhook's scheme: for ed25519, a new key
	// pair, whose public half the webhook and GET /v3/signing-keys show.
	hook, err := a.store.Webhook(r.Context(), accountID(r), pathID(r, "id"))
	if err == nil {
		hook, err = a.store.RotateWebhookToken(r.Context(), accountID(r), pathID(r, "id"), validator.NewToken(hook.SignatureScheme), overlap)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("webhook")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "rotation-under-way", "Token rotation under way",
			"a token rotation is already under way; finish it (POST …/token/rotate/finish) or wait for its end, then rotate again")
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusOK, a.toWebhookJSON(hook))
}

// finishWebhookTokenRotation ends a rotation now: the next token signs
// webhook-signature from here on and the old token is erased.
func (a *API) finishWebhookTokenRotation(w http.ResponseWriter, r *http.Request) error {
	if err := decode(w, r, &struct{}{}, true); err != nil {
		return err
	}
	hook, err := a.store.FinishTokenRotation(r.Context(), accountID(r), pathID(r, "id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("webhook")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "no-rotation", "No token rotation under way",
			"no token rotation is under way: none was started, or it has ended and the next token already signs webhook-signature")
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusOK, a.toWebhookJSON(hook))
}
