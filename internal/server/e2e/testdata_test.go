package e2e_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// Test data (testData: true at creation) fires its creation as any change,
// and its deletion not at all, its children going silently; the mark is
// set at creation only.
func TestTestDataIsDeletedWithoutEvents(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
		rcv := heraldtest.NewReceiver(t)
		h.CreateWebhook("all", rcv.URL, "product.created", "product.deleted", "user.created", "user.deleted", "license.deleted")
		var p, u, real struct{ ID string }
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "test", "testData": true}, &p)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": p.ID}, nil)
		h.Must(201, "POST", "/v3/users", map[string]any{"email": "t@example.com", "testData": true}, &u)
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "real"}, &real)
		h.Must(422, "PATCH", "/v3/products/"+real.ID, map[string]any{"name": "x", "testData": true}, nil)
		h.Must(422, "PATCH", "/v3/users/"+u.ID, map[string]any{"name": "x", "testData": false}, nil)
		h.Must(204, "DELETE", "/v3/products/"+p.ID, nil, nil)
		h.Must(204, "DELETE", "/v3/users/"+u.ID, nil, nil)
		h.Must(204, "DELETE", "/v3/products/"+real.ID, nil, nil)
		var deleted []string
		for _, l := range h.Logs("") {
			if l.Event == "product.deleted" || l.Event == "user.deleted" || l.Event == "license.deleted" {
				deleted = append(deleted, l.Event)
			}
		}
		if len(deleted) != 1 {
			t.Errorf("deletion events %v; want the real product's alone", deleted)
		}
		if n := len(h.Logs("event=product.created")); n != 2 {
			t.Errorf("%d product.created; want both creations", n)
		}
	})
}
