package portal

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// rotationOverlap is an overlap the Rotate token form offers.
type rotationOverlap struct {
	Seconds int64
	Label   string
}

// rotationOverlaps are the form's choices, the default first; the API takes
// any overlap within validator's bounds.
var rotationOverlaps = []rotationOverlap{
	{int64(validator.DefaultRotationOverlap / time.Second), "24 hours"},
	{3600, "1 hour"},
	{7 * 24 * 3600, "7 days"},
	{int64(validator.MaxRotationOverlap / time.Second), "30 days"},
}

// rotateToken starts a token rotation from the webhook's page, then shows
// the page again (post/redirect/get) with the rotation's end.
func (h *handler) rotateToken(w http.ResponseWriter, r *http.Request, s store.Session) error {
	seconds, err := strconv.ParseInt(r.PostForm.Get("overlap"), 10, 64)
	var v validator.Errors
	overlap := time.Duration(0)
	if err != nil {
		v.Add("overlap", "Choose how long both tokens sign deliveries.")
	} else {
		overlap = validator.CheckRotationOverlap(&v, "overlap", seconds)
	}
	if len(v) > 0 {
		return h.webhookProblem(w, r, s, http.StatusUnprocessableEntity, "Overlap "+v[0].Detail+". Nothing was changed.")
	}
	// The next token is of the webhook's scheme: for ed25519, a new key
	// pair, whose public half the webhook's page shows.
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	_, err = h.store.RotateWebhookToken(r.Context(), s.AccountID, r.PathValue("id"), validator.NewToken(hook.SignatureScheme), overlap)
	if errors.Is(err, store.ErrConflict) {
		return h.webhookProblem(w, r, s, http.StatusConflict, "A token rotation is already under way. Finish it, or wait for its end, before starting another.")
	}
	if err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+r.PathValue("id"), flash{Notice: "Token rotation started. Reveal the tokens, add the next one to your receiver, then finish the rotation."})
}

// finishRotation ends the rotation under way now: the next token signs
// webhook-signature from here on and the old one is erased.
func (h *handler) finishRotation(w http.ResponseWriter, r *http.Request, s store.Session) error {
	_, err := h.store.FinishTokenRotation(r.Context(), s.AccountID, r.PathValue("id"))
	if errors.Is(err, store.ErrConflict) {
		return h.webhookProblem(w, r, s, http.StatusConflict, "No token rotation is under way: it has ended, and the next token already signs every delivery.")
	}
	if err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+r.PathValue("id"), flash{Notice: "Token rotation finished. The next token now signs every delivery; the old one is erased."})
}

// webhookProblem shows the webhook's page again, answering code, with why
// an action changed nothing (post/redirect/get, like every form).
func (h *handler) webhookProblem(w http.ResponseWriter, r *http.Request, s store.Session, code int, msg string) error {
	return h.redirectWith(w, r, "/webhooks/"+r.PathValue("id"), flash{Status: code, Error: msg})
}
