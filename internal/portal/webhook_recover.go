package portal

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// recovery is what a webhook's page shows of getting its missed events
// through: how many a recovery would resend now (a dry run's count), and
// the latest recovery with its progress.
type recovery struct {
	Missed int
	Latest *store.Recovery
}

// Running says whether the latest recovery still runs.
func (r recovery) Running() bool { return r.Latest != nil && r.Latest.Status == store.RecoveryRunning }

// recoveryData reads the webhook's recovery state. The count is bounded the
// way undeliveredCount is: logs completed since it last left Healthy.
func (h *handler) recoveryData(r *http.Request, s store.Session, hook store.Webhook) (recovery, error) {
	var d recovery
	list, _, err := h.queue.Recoveries(r.Context(), s.AccountID, hook.ID, store.Page{Limit: 1})
	if err != nil {
		return d, err
	}
	// A recovery that ended before the webhook last left Healthy belongs to
	// an earlier outage: under a fresh Unhealthy or Suspended banner it
	// would read as if it had just been tried.
	if len(list) > 0 && !(list[0].FinishedAt != nil && hook.LeftHealthyAt != nil && list[0].FinishedAt.Before(*hook.LeftHealthyAt)) {
		d.Latest = &list[0]
	}
	if hook.LeftHealthyAt != nil {
		d.Missed, err = h.queue.CountRecoverable(r.Context(), s.AccountID, hook.ID, queue.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt})
	}
	return d, err
}

// recoverWebhook starts a recovery of the webhook's missed events (those
// undeliveredCount counts), then goes back to its page (post/redirect/get),
// which shows the progress; a refusal is shown there as the page's error.
func (h *handler) recoverWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	page := "/webhooks/" + hook.ID
	if hook.LeftHealthyAt == nil {
		// Nothing to resend, and nothing stored: the form is still spent.
		if err := h.store.MarkIdempotencyApplied(r.Context()); err != nil {
			return err
		}
		return h.redirectWith(w, r, page, flash{Notice: "The webhook is Healthy: it has no missed events to resend."})
	}
	_, err = h.queue.StartRecovery(r.Context(), s.AccountID, hook.ID, queue.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt})
	switch {
	case errors.Is(err, queue.ErrWebhookDisabled):
		return h.redirectWith(w, r, page, flash{Status: http.StatusConflict,
			Error: "The webhook is disabled, so it sends nothing. Enable it, then resend its missed events."})
	case errors.Is(err, queue.ErrRecoveryRunning):
		return h.redirectWith(w, r, page, flash{Status: http.StatusConflict,
			Error: "The missed events are already being resent; see the progress below."})
	case err != nil:
		return err
	}
	return h.redirectWith(w, r, page, flash{Notice: "Resending the missed events, each once; the progress shows below."})
}
