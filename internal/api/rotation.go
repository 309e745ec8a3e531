package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
)

// The overlap of a token rotation: long enough by default for an owner to
// deploy the next token to a receiver, at least a minute (so a receiver
// sees the second header before the switch), at most 30 days (an old token
// kept longer is a token not rotated).
const (
	DefaultRotationOverlap = 24 * time.Hour
	MinRotationOverlap     = time.Minute
	MaxRotationOverlap     = 30 * 24 * time.Hour
)

type tokenRotationJSON struct {
	StartedAt string `json:"startedAt"`
	EndsAt    string `json:"endsAt"`
}

func toTokenRotationJSON(r *store.TokenRotation) *tokenRotationJSON {
	if r == nil {
		return nil
	}
	return &tokenRotationJSON{StartedAt: ts(r.StartedAt), EndsAt: ts(r.EndsAt)}
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
	overlap := DefaultRotationOverlap
	if in.OverlapSeconds != nil {
		s := *in.OverlapSeconds
		if s < int64(MinRotationOverlap/time.Second) || s > int64(MaxRotationOverlap/time.Second) {
			return Invalid{{"overlapSeconds", fmt.Sprintf("must be from %d (a minute) to %d (30 days); default %d (24 hours)",
				int64(MinRotationOverlap/time.Second), int64(MaxRotationOverlap/time.Second), int64(DefaultRotationOverlap/time.Second))}}.Err()
		}
		overlap = time.Duration(s) * time.Second
	}
	hook, err := a.store.RotateWebhookToken(r.Context(), accountID(r), pathID(r, "id"), auth.NewWebhookToken(), overlap)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("webhook")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "rotation-under-way", "Token rotation under way",
			"a token rotation is already under way; finish it (POST …/token/rotate/finish) or wait for its end, then rotate again")
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusOK, toWebhookJSON(hook))
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
	return writeJSON(w, http.StatusOK, toWebhookJSON(hook))
}
