package e2e_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
)

// maxSignatureCheckAllocPerByte bounds what the whole process allocates
// for one signature check, per byte of the body checked: reading and
// decoding the form and rendering the page (some 30 bytes per byte, the
// pasted Base64 shown again), and the check itself (up to 60, see
// sigcheck's test), this test's client included.
const maxSignatureCheckAllocPerByte = 120

// TestSignatureCheckOfWorstBodies pastes the worst shapes of JSON into
// "Check a signature", with a wrong signature so that every variant is
// tried, at about the largest body its form carries (as Base64, which
// the form's 512 KiB hold), and holds each check to a fixed multiple of
// the body in memory; a body nested too deep is said to be so.
//
// Not parallel: the allocation counted is the whole process's.
func TestSignatureCheckOfWorstBodies(t *testing.T) {
	h := heraldtest.Start(t, heraldtest.Options{})
	id, _ := signedWebhook(t, h)
	b := mustSignIn(t, h)
	for _, s := range jsonlimittest.Shapes(320 << 10) {
		form := url.Values{"body": {base64.StdEncoding.EncodeToString(s.Body)}, "encoding": {"base64"}, "signature": {"AAAA"}}
		var code int
		var page string
		limit := uint64(maxSignatureCheckAllocPerByte * len(s.Body))
		got := jsonlimittest.Allocated(limit, func() { code, _, page = b.post("/webhooks/"+id+"/signature", form) })
		t.Logf("%s: %d bytes allocated for %d bytes (%.1f per byte)", s.Name, got, len(s.Body), float64(got)/float64(len(s.Body)))
		if code != http.StatusOK {
			t.Fatalf("%s: %d; want 200\n%.2000s", s.Name, code, page)
		}
		if got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of body; want at most %d per byte", s.Name, got, len(s.Body), maxSignatureCheckAllocPerByte)
		}
		if noted := strings.Contains(page, "nests deeper than 64 levels"); noted != s.Deep {
			t.Errorf("%s: the page says the body nests too deep: %v; want %v", s.Name, noted, s.Deep)
		}
	}
}

// A payload stored by an older herald, nested deeper than herald now
// builds, shows on its log's page as sent, without the indented copy that
// would cost every line its depth.
func TestLogPageShowsADeepPayloadAsSent(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	// Disabled: its logs are cancelled, nothing is sent anywhere.
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "off", "url": "https://crm.example.com/in",
		"events": []string{"product.created"}, "enabled": false}, nil)
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, nil)
	logs := h.Logs("")
	if len(logs) != 1 {
		t.Fatalf("%d logs; want the product's one", len(logs))
	}
	b := mustSignIn(t, h)
	if code, _, page := b.get("/webhook-event-logs/" + logs[0].ID); code != 200 || !strings.Contains(page, "Formatted for reading") {
		t.Fatalf("log page of a herald body: %d; want 200 with the indented copy", code)
	}
	deep := `{"id":"` + logs[0].EventID + `","event":"product.created","data":` +
		strings.Repeat("[", jsonlimit.MaxDepth) + strings.Repeat("]", jsonlimit.MaxDepth) + `,"triggeredAt":"2026-11-21T08:07:13.120Z"}`
	db := heraldtest.OpenDB(t, h.Options.DatabaseURL)
	if _, err := db.SQL().Exec(`UPDATE events SET body = ? WHERE id = ?`, []byte(deep), logs[0].EventID); err != nil {
		t.Fatal(err)
	}
	code, _, page := b.get("/webhook-event-logs/" + logs[0].ID)
	if code != 200 || strings.Contains(page, "Formatted for reading") || !strings.Contains(page, strings.Repeat("[", jsonlimit.MaxDepth)) {
		t.Errorf("log page of a deep payload: %d; want 200 with the payload as sent and no indented copy\n%.3000s", code, page)
	}
}
