package portal

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/store"
)

type logData struct {
	Log     store.EventLog
	Webhook store.Webhook
	Pretty  string         // the payload indented, for reading; "" when it is not JSON
	Resent  *store.Attempt // the attempt a resend just made
	Error   string         // why a resend could not be made
}

// eventLog shows one event log: its exact payload, every attempt, and the
// outcome of a resend just made, or why it was refused (a flash).
func (h *handler) eventLog(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d, err := h.logData(r, s)
	if err != nil {
		return err
	}
	f := flashFrom(r.Context())
	d.Error = f.Error
	if n := f.Resent; n > 0 {
		for i, a := range d.Log.Attempts {
			if a.Number == n && a.Trigger == store.TriggerResend {
				d.Resent = &d.Log.Attempts[i]
			}
		}
	}
	return h.render(w, r, http.StatusOK, "log", d)
}

func (h *handler) logData(r *http.Request, s store.Session) (logData, error) {
	l, err := h.store.Log(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return logData{}, err
	}
	hook, err := h.store.Webhook(r.Context(), s.AccountID, l.WebhookID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return logData{}, err
	}
	d := logData{Log: l, Webhook: hook}
	// Indenting costs every line its depth, so a payload deeper than any
	// herald builds (one an older herald stored) is shown only as sent.
	var buf bytes.Buffer
	if jsonlimit.Check(l.Payload) == nil && json.Indent(&buf, l.Payload, "", "  ") == nil {
		d.Pretty = buf.String()
	}
	return d, nil
}
