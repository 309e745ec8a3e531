package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
)

// confirmDelete asks before deleting: a webhook goes with all its event logs.
func (h *handler) confirmDelete(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return h.render(w, r, http.StatusOK, "webhook_delete", hook)
}

// deleteWebhook deletes a webhook and its event logs.
func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := h.store.DeleteWebhook(r.Context(), s.AccountID, r.PathValue("id")); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks", flash{Notice: "Webhook deleted."})
}
