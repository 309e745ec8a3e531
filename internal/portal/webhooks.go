package portal

import (
	"net/http"

	"github.com/heraldhq/herald/internal/store"
)

type webhooksData struct {
	Webhooks []store.Webhook
	Next     string // URL of the next page, "" on the last
}

// webhooks lists the account's webhooks, newest first.
func (h *handler) webhooks(w http.ResponseWriter, r *http.Request, s store.Session) error {
	list, next, err := h.store.Webhooks(r.Context(), s.AccountID, store.WebhookFilter{
		Page: store.Page{Limit: 100, Cursor: r.URL.Query().Get("cursor")},
	})
	if err != nil {
		return err
	}
	d := webhooksData{Webhooks: list}
	if next != "" {
		d.Next = withQuery("/webhooks", "cursor", next)
	}
	return h.render(w, r, http.StatusOK, "webhooks", d)
}
