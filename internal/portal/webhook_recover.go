package portal

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/store"
)

// recovery is what a webhook's page shows of getting its missed events
// through: how many a recovery would resend now (a dry run's count), and
// the latest recovery with its progress.
type recovery struct {
	Missed int
	Latest *store.Recovery
	Error  string // why a recovery was refused, for the page that answers the POST
}

// Running says whether the latest recovery still runs.
func (r recovery) Running() bool { return r.Latest != nil && r.Latest.Status == store.RecoveryRunning }

// recoveryData reads the webhook's recovery state. The count is bounded the
// way undeliveredCount is: logs completed since it last left Healthy.
func (h *handler) recoveryData(r *http.Request, s store.Session, hook store.Webhook) (recovery, error) {
	var d recovery
	list, _, err := h.store.Recoveries(r.Context(), s.AccountID, hook.ID, store.Page{Limit: 1})
	if err != nil {
		return d, err
	}
	if len(list) > 0 {
		d.Latest = &list[0]
	}
	if hook.LeftHealthyAt != nil {
		d.Missed, err = h.store.CountRecoverable(r.Context(), s.AccountID, hook.ID, store.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt})
	}
	return d, err
}

// recoverWebhook starts a recovery of the webhook's missed events (those
// undeliveredCount counts), then goes back to its page, which shows the
// progress.
func (h *handler) recoverWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if hook.LeftHealthyAt == nil {
		return redirect(w, r, withQuery("/webhooks/"+hook.ID, "done", "nothing-missed"))
	}
	_, err = h.store.StartRecovery(r.Context(), s.AccountID, hook.ID, store.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt})
	var refused string
	switch {
	case errors.Is(err, store.ErrWebhookDisabled):
		refused = "The webhook is disabled, so it sends nothing. Enable it, then resend its missed events."
	case errors.Is(err, store.ErrRecoveryRunning):
		refused = "The missed events are already being resent; see the progress below."
	case err != nil:
		return err
	}
	if refused != "" {
		d, err := h.webhookData(r, s)
		if err != nil {
			return err
		}
		d.Recovery.Error = refused
		return h.render(w, r, http.StatusConflict, "webhook", d)
	}
	return redirect(w, r, withQuery("/webhooks/"+hook.ID, "done", "recovery"))
}
