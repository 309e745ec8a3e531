package e2e_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// A client may send non-ASCII as \u escapes; the delivery still carries raw
// UTF-8, and its signature covers exactly those bytes.
func TestEscapedMetadataIsDeliveredAsRawUTF8(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("w", rcv.URL, "license.created")
	var p struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &p)
	h.Must(201, "POST", "/v3/licenses", `{"productId":"`+p.ID+`","metadata":{"customer":"Zo\u00eb \ud83d\ude80 \u65e5\u672c"}}`, nil)
	heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	got := rcv.Requests()[0]
	if !bytes.Contains(got.Body, []byte("Zoë 🚀 日本")) || bytes.Contains(got.Body, []byte(`\u`)) {
		t.Errorf("body is not raw UTF-8: %s", got.Body)
	}
	if err := webhook.Verify(hook.Token, got.Body, got.Header.Get("webhook-signature")); err != nil {
		t.Error(err)
	}
}
