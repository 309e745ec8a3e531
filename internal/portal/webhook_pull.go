package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
)

// createPullToken makes a pull token for a pull webhook (decision 0140)
// and shows it on the webhook's page, the only time herald can: it
// crosses the redirect in a flash sealed for this browser's session, as a
// new API token's secret does.
func (h *handler) createPullToken(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if hook.Type != store.TypePull {
		return h.redirectWith(w, r, "/webhooks/"+hook.ID, flash{Status: http.StatusConflict,
			Error: "Only a pull webhook has pull tokens: this one POSTs its events to its URL."})
	}
	token := auth.NewPullToken()
	if _, err := h.store.CreatePullToken(r.Context(), s.AccountID, hook.ID, auth.HashToken(token)); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+hook.ID, flash{Secret: token, PullToken: true})
}
