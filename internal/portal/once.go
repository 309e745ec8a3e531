package portal

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Every form of a signed-in page carries a one-time token (the "form"
// field, new at each rendering), and a form is acted on once however often
// it is posted: a double click, a resubmission after Back, or two herald
// processes on one PostgreSQL answering the two posts. The token is an
// idempotency key of the account (store.ClaimIdempotencyKey), so the
// change a form makes and the spending of its token commit together.

// formKeyPrefix keeps form tokens apart from the API's Idempotency-Keys,
// which share the table.
const formKeyPrefix = "portal-form:"

// alreadySent is said when a form's token was spent by an earlier post
// that the person did not see land (a resubmission after Back).
const alreadySent = "This form had already been sent, so it was not acted on again."

// pollSpent is how often a post waits to see whether the first post of
// its form is done.
const pollSpent = 100 * time.Millisecond

// once runs fn for the first post of a form, and sends every later post of
// it where the first landed. A post whose first is still running (the
// second click of a double click) waits for it. A form the first post
// refused for its values (nothing changed) frees its token, so the same
// form corrected can be sent.
func (h *handler) once(w http.ResponseWriter, r *http.Request, s store.Session, fn sessionFunc) error {
	tok := r.PostForm.Get("form")
	if len(tok) != 43 || strings.Trim(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return &httpError{Code: http.StatusBadRequest, Msg: "This form is damaged. Go back, reload the page and try again."}
	}
	// The first post is finished even when the browser gave up on it (a
	// second click makes it drop the first request): its outcome is what
	// the second post shows.
	ctx := context.WithoutCancel(r.Context())
	req := store.IdempotentRequest{AccountID: s.AccountID, Key: formKeyPrefix + tok, Method: http.MethodPost, Path: r.URL.Path}
	page := localPath(r.PostForm.Get("page"), "/webhooks")
	deadline := time.Now().Add(store.IdempotencyLock + 10*time.Second)
	waited := false
	for {
		c, err := h.store.ClaimIdempotencyKey(ctx, req)
		if err != nil {
			return err
		}
		switch c.Outcome {
		case store.KeyClaimed:
			return h.runOnce(w, r.WithContext(store.WithIdempotencyClaim(ctx, c)), s, c, fn)
		case store.KeyDone:
			to := localPath(c.Answer.Location, page)
			if waited {
				return redirect(w, r, to) // the first post's flash waits there
			}
			return h.redirectWith(w, r, to, flash{Notice: alreadySent})
		case store.KeyInUse:
			if time.Now().After(deadline) {
				return &httpError{Code: http.StatusConflict, Msg: "This form is still being acted on. Wait a moment, then reload the page to see the outcome."}
			}
			waited = true
			select {
			case <-r.Context().Done():
				return r.Context().Err()
			case <-time.After(pollSpent):
			}
		default: // its change was made but its answer lost, or a tampered form
			return h.redirectWith(w, r, page, flash{Notice: alreadySent})
		}
	}
}

// runOnce runs fn under its claim and keeps its answer for later posts of
// the form when it changed something.
func (h *handler) runOnce(w http.ResponseWriter, r *http.Request, s store.Session, c store.IdempotencyClaim, fn sessionFunc) error {
	rec := &answerRecorder{ResponseWriter: w}
	err := fn(rec, r, s)
	a := store.IdempotentAnswer{Status: rec.status, Location: rec.Header().Get("Location")}
	if a.Status == 0 {
		a.Status = http.StatusInternalServerError // fn failed before answering; its error is rendered next
	}
	if _, serr := h.store.SettleIdempotencyKey(r.Context(), c, a); serr != nil && err == nil {
		h.log.Error("settle form token", "path", r.URL.Path, "err", serr)
	}
	return err
}

// answerRecorder notes the status an answer was given.
type answerRecorder struct {
	http.ResponseWriter
	status int
}

func (a *answerRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}
