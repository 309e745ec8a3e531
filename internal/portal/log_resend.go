package portal

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/store"
)

// resend delivers the log's payload again now, then shows the log with the
// new attempt and its outcome.
func (h *handler) resend(w http.ResponseWriter, r *http.Request, s store.Session) error {
	id := r.PathValue("id")
	l, err := h.delivery.Resend(r.Context(), s.AccountID, id)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, delivery.ErrWebhookDisabled) || errors.Is(err, delivery.ErrBusy) {
		d, derr := h.logData(r, s)
		if derr != nil {
			return derr
		}
		code := http.StatusConflict
		switch {
		case errors.Is(err, delivery.ErrWebhookDisabled):
			d.Error = "The webhook is disabled, so it sends nothing. Enable it, then resend."
		case errors.Is(err, delivery.ErrBusy):
			code = http.StatusTooManyRequests
			d.Error = "The webhook already has as many deliveries in flight as it may take. Nothing was sent; try again in a moment."
		default:
			d.Error = "An attempt of this log (automatic, or another resend) is in flight. Resend once it has completed."
		}
		return h.render(w, r, code, "log", d)
	}
	if err != nil {
		return err
	}
	n := 0
	if len(l.Attempts) > 0 {
		n = l.Attempts[len(l.Attempts)-1].Number
	}
	return redirect(w, r, "/webhook-event-logs/"+l.ID+"?resent="+strconv.Itoa(n))
}
