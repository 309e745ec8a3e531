package portal

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/heraldhq/herald/internal/store"
)

// TestFlashIsSealedForItsBrowserAndPage: a flash opens only with the
// secret of the browser it was made for and on its own page; the store
// holds neither the secret nor the text.
func TestFlashIsSealedForItsBrowserAndPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), store.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &handler{store: st}
	secret, other := randomToken(), randomToken()
	f := flash{Notice: "Webhook added.", Secret: "herald_api_secret_value", Form: url.Values{"name": {"Billing"}}}
	if err := h.addFlash(ctx, secret, "/account/api-tokens", f); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, secret, holder, path string
		opens                      bool
	}{
		{"its browser, its page", secret, secret, "/account/api-tokens", true},
		{"another browser's secret", other, secret, "/account/api-tokens", false},
		{"moved to another page", secret, secret, "/webhooks", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := h.addFlash(ctx, secret, "/account/api-tokens", f); err != nil {
				t.Fatal(err)
			}
			rows, err := st.TakeFlashes(ctx, hashID(c.holder), "/account/api-tokens")
			if err != nil || len(rows) == 0 {
				t.Fatalf("take: %v, %d rows", err, len(rows))
			}
			for _, r := range rows {
				if bytes.Contains(r.Body, []byte("herald_api_secret_value")) || bytes.Contains(r.Body, []byte("Billing")) || r.Holder == c.holder {
					t.Errorf("the stored flash holds its text or the raw secret")
				}
				r.Path = c.path
				got, err := openFlash(c.secret, r)
				if c.opens && (err != nil || got.Secret != f.Secret || got.Form.Get("name") != "Billing") {
					t.Errorf("open: %+v, %v; want the flash", got, err)
				}
				if !c.opens && err == nil {
					t.Errorf("opened with the wrong secret or page: %+v", got)
				}
			}
		})
	}
}
