package portal

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/store"
)

// skip lets the later events of a held log's license go on (decision
// 0131), and shows the log again.
func (h *handler) skip(w http.ResponseWriter, r *http.Request, s store.Session) error {
	id := r.PathValue("id")
	page := "/webhook-event-logs/" + id
	err := h.queue.SkipHeld(r.Context(), s.AccountID, id)
	if errors.Is(err, store.ErrConflict) {
		return h.redirectWith(w, r, page, flash{Status: http.StatusConflict,
			Error: "This log holds back no later event (it was skipped or resent already), so there is nothing to skip."})
	}
	if err != nil {
		return err
	}
	return h.redirectWith(w, r, page, flash{Notice: "Skipped: the later events of its license go on."})
}

// resend delivers the log's payload again now, then shows the log with the
// new attempt and its outcome; a refusal is shown on the log's page too,
// answering its status there, so the address never stays at /resend.
func (h *handler) resend(w http.ResponseWriter, r *http.Request, s store.Session) error {
	id := r.PathValue("id")
	page := "/webhook-event-logs/" + id
	err := h.delivery.Resend(r.Context(), s.AccountID, id)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, delivery.ErrWebhookDisabled) || errors.Is(err, delivery.ErrBusy) {
		if _, err := h.store.Log(r.Context(), s.AccountID, id); err != nil {
			return err
		}
		f := flash{Status: http.StatusConflict}
		switch {
		case errors.Is(err, delivery.ErrWebhookDisabled):
			f.Error = "The webhook is disabled, so it sends nothing. Enable it, then resend."
		case errors.Is(err, delivery.ErrBusy):
			f.Status = http.StatusTooManyRequests
			f.Error = "The webhook already has as many deliveries in flight as it may take. Nothing was sent; try again in a moment."
		default:
			f.Error = "An attempt of this log (automatic, or another resend) is in flight. Resend once it has completed."
		}
		return h.redirectWith(w, r, page, f)
	}
	if err != nil {
		return err
	}
	l, err := h.store.Log(r.Context(), s.AccountID, id)
	if err != nil {
		return err
	}
	n := 0
	if len(l.Attempts) > 0 {
		n = l.Attempts[len(l.Attempts)-1].Number
	}
	return h.redirectWith(w, r, page, flash{Resent: n})
}
