package portal

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/internal/store"
)

// resend delivers the log's payload again now, then shows the log with the
// new attempt and its outcome.
func (h *handler) resend(w http.ResponseWriter, r *http.Request, s store.Session) error {
	id := r.PathValue("id")
	l, err := h.delivery.Resend(r.Context(), s.AccountID, id)
	if errors.Is(err, store.ErrConflict) {
		d, err := h.logData(r, s)
		if err != nil {
			return err
		}
		d.Error = "An automatic attempt of this log is in flight. Resend once it has completed."
		return h.render(w, r, http.StatusConflict, "log", d)
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
