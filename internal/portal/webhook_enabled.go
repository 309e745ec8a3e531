package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
)

// setEnabled enables or disables a webhook from its actions menu, then goes
// back to the page the menu was on.
func (h *handler) setEnabled(w http.ResponseWriter, r *http.Request, s store.Session) error {
	var enabled bool
	switch r.PostForm.Get("enabled") {
	case "true":
		enabled = true
	case "false":
	default:
		return &httpError{Code: http.StatusBadRequest, Msg: "Choose whether the webhook is enabled."}
	}
	if _, err := h.store.UpdateWebhook(r.Context(), s.AccountID, r.PathValue("id"), store.WebhookPatch{Enabled: &enabled}); err != nil {
		return err
	}
	done := "Webhook disabled."
	if enabled {
		done = "Webhook enabled."
	}
	return h.redirectWith(w, r, localPath(r.PostForm.Get("next"), "/webhooks"), flash{Notice: done})
}
