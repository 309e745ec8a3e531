package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

type recoveryJSON struct {
	ID         string               `json:"id"`
	WebhookID  string               `json:"webhookId"`
	Status     store.RecoveryStatus `json:"status"`
	Count      int                  `json:"count"`
	Sent       int                  `json:"sent"`
	Succeeded  int                  `json:"succeeded"`
	Failed     int                  `json:"failed"`
	CreatedAt  string               `json:"createdAt"`
	FinishedAt *string              `json:"finishedAt"`
}

func toRecoveryJSON(r store.Recovery) recoveryJSON {
	return recoveryJSON{ID: r.ID, WebhookID: r.WebhookID, Status: r.Status, Count: r.Count, Sent: r.Sent,
		Succeeded: r.Succeeded, Failed: r.Failed, CreatedAt: ts(r.CreatedAt), FinishedAt: optTS(r.FinishedAt)}
}

type recoverInput struct {
	Since    *string            `json:"since"`
	Until    *string            `json:"until"`
	Statuses *[]store.LogStatus `json:"statuses"`
	DryRun   bool               `json:"dryRun"`
}

// filter checks the input and turns it into the store's filter.
func (in recoverInput) filter() (queue.RecoveryFilter, error) {
	var f queue.RecoveryFilter
	var v Invalid
	parse := func(field string, s *string) time.Time {
		if s == nil {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, *s)
		if err != nil {
			v.Add(field, "must be an RFC 3339 time, e.g. 2026-11-21T08:00:00Z")
		}
		return t
	}
	if in.Since == nil {
		v.Add("since", "is required: the time of the oldest event to resend")
	}
	f.Since, f.Until = parse("since", in.Since), parse("until", in.Until)
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		v.Add("until", "must be after since")
	}
	if in.Statuses != nil {
		if len(*in.Statuses) == 0 {
			v.Add("statuses", "name failed, cancelled or both, or leave it out for both")
		}
		for _, s := range *in.Statuses {
			if s != store.Failed && s != store.Cancelled {
				v.Add("statuses", "each must be failed or cancelled")
				break
			}
		}
		f.Statuses = *in.Statuses
	}
	return f, v.Err()
}

func (a *API) recoverWebhook(w http.ResponseWriter, r *http.Request) error {
	var in recoverInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	f, err := in.filter()
	if err != nil {
		return err
	}
	id := pathID(r, "id")
	hook, err := a.store.Webhook(r.Context(), accountID(r), id)
	if err != nil {
		return recoveryError(err)
	}
	if !hook.Enabled {
		// A dry run answers what the recovery would: a refusal.
		return recoveryError(queue.ErrWebhookDisabled)
	}
	if in.DryRun {
		n, err := a.queue.CountRecoverable(r.Context(), accountID(r), id, f)
		if err != nil {
			return recoveryError(err)
		}
		return writeJSON(w, http.StatusOK, map[string]int{"count": n})
	}
	rec, err := a.queue.StartRecovery(r.Context(), accountID(r), id, f)
	if err != nil {
		return recoveryError(err)
	}
	w.Header().Set("Location", "/v3/webhooks/"+id+"/recoveries/"+rec.ID)
	return writeJSON(w, http.StatusAccepted, toRecoveryJSON(rec))
}

// recoveryError answers the store's refusals of a recovery.
func recoveryError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("webhook")
	case errors.Is(err, queue.ErrWebhookDisabled):
		return problem(http.StatusConflict, "webhook-disabled", "Webhook disabled",
			"the webhook is disabled, and a disabled webhook sends nothing; enable it, then recover")
	case errors.Is(err, queue.ErrRecoveryRunning):
		return problem(http.StatusConflict, "recovery-running", "Recovery running", queue.ErrRecoveryRunning.Error())
	}
	return err
}

func (a *API) listRecoveries(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	list, next, err := a.queue.Recoveries(r.Context(), accountID(r), pathID(r, "id"), p)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	out := make([]recoveryJSON, len(list))
	for i, rec := range list {
		out[i] = toRecoveryJSON(rec)
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getRecovery(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.queue.Recovery(r.Context(), accountID(r), pathID(r, "id"), pathID(r, "rid"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("recovery")
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toRecoveryJSON(rec))
}

func (a *API) cancelRecovery(w http.ResponseWriter, r *http.Request) error {
	rec, err := a.queue.CancelRecovery(r.Context(), accountID(r), pathID(r, "id"), pathID(r, "rid"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("recovery")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "recovery-ended", "Recovery ended", "the recovery has already ended; only a running one can be cancelled")
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusOK, toRecoveryJSON(rec))
}
