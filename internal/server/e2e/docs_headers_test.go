package e2e_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// docs/receiving.md shows a delivery as it arrives. Its headers must be the
// ones herald sends: a receiver written from the page must not expect one
// that never comes (an Accept-Encoding, say) nor miss one that does.
func TestReceivingDocShowsTheHeadersADeliveryCarries(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../../docs/receiving.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```http\nPOST [^\n]*\n(.*?)\n\n").FindSubmatch(text)
	if m == nil {
		t.Fatal("docs/receiving.md has no ```http block starting with POST; has the page changed?")
	}
	var documented []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("not a header line in the documented delivery: %q", line)
		}
		documented = append(documented, http.CanonicalHeaderKey(name))
	}
	slices.Sort(documented)

	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	h.CreateWebhook("docs", rcv.URL, "license.created")
	var p struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "Docs"}, &p)
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": p.ID}, nil)
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	got := rcv.Requests()[0]
	sent := []string{"Host"} // Go's server keeps Host out of the header map
	for name := range got.Header {
		sent = append(sent, name)
	}
	slices.Sort(sent)
	if !slices.Equal(documented, sent) {
		t.Errorf("docs/receiving.md shows the headers %v; a delivery carries %v", documented, sent)
	}
}
