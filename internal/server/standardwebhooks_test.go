package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestStandardWebhooksLibrariesVerifyDeliveries: a webhook signed the
// Standard Webhooks way is verified by the official libraries (Go's, and
// npm standardwebhooks and svix under node), not by herald's own code:
// a delivery, a Test, and during a token rotation a delivery carrying both
// signatures, which each token verifies alone. A tampered body fails all.
func TestStandardWebhooksLibrariesVerifyDeliveries(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "installs npm packages and runs node")
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "sw", URL: rcv.URL, Events: []string{"license.created"},
		SignatureScheme: "standard-webhooks"})
	if err != nil {
		t.Fatal(err)
	}
	if hook.SignatureScheme != "standard-webhooks" {
		t.Fatalf("signatureScheme %q; want standard-webhooks", hook.SignatureScheme)
	}
	old := hook.Token

	h.CreateLicense(map[string]any{"name": "Zoë – 日本語 – 🚀"})
	heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	test, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{})
	if err != nil || !test.Succeeded {
		t.Fatalf("test: %+v, %v", test, err)
	}
	if _, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, next, err := h.API.WebhookTokens(ctx, hook.ID)
	if err != nil || next == "" {
		t.Fatalf("next token %q, %v", next, err)
	}
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the delivery during the rotation", func() bool { return rcv.Count() == 3 })
	got := rcv.Requests()

	type check struct {
		name   string
		token  string
		header http.Header
		body   []byte
		want   bool
	}
	var checks []check
	for i, r := range got {
		name := []string{"delivery", "test", "delivery during a rotation"}[i]
		if r.Header.Get(webhook.TimestampHeader) == "" || r.Header.Get(webhook.IDHeader) == "" {
			t.Errorf("%s arrived without webhook-id and webhook-timestamp: %v", name, r.Header)
		}
		checks = append(checks, check{name + ", old token", old, r.Header, r.Body, true})
		tampered := append([]byte(nil), r.Body...)
		tampered[len(tampered)-2] ^= 1
		checks = append(checks, check{name + ", tampered body", old, r.Header, tampered, false})
		if i == 2 {
			checks = append(checks, check{name + ", next token", next, r.Header, r.Body, true})
		} else {
			checks = append(checks, check{name + ", next token", next, r.Header, r.Body, false})
		}
	}

	// Go: github.com/standard-webhooks/standard-webhooks/libraries.
	for _, c := range checks {
		wh, err := standardwebhooks.NewWebhook(webhook.StandardSecret(c.token))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := standardwebhooks.NewWebhookRaw([]byte(c.token))
		for lib, w := range map[string]*standardwebhooks.Webhook{"whsec_ secret": wh, "raw secret": raw} {
			if err := w.Verify(c.body, c.header); (err == nil) != c.want {
				t.Errorf("Go library (%s), %s: verify = %v; want ok %v", lib, c.name, err, c.want)
			}
		}
	}

	// Node: npm standardwebhooks and svix, installed from the committed lock.
	_, nodeErr := exec.LookPath("node")
	_, npmErr := exec.LookPath("npm")
	heraldtest.SkipUnless(t, nodeErr == nil && npmErr == nil, "node and npm are not installed")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "verify.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "standardwebhooks", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	type nodeCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var cases []nodeCase
	for _, c := range checks {
		headers := map[string]string{}
		for _, name := range []string{webhook.IDHeader, webhook.TimestampHeader, webhook.SignatureHeader} {
			headers[name] = c.header.Get(name)
		}
		cases = append(cases, nodeCase{webhook.StandardSecret(c.token), headers, string(c.body)})
	}
	in, _ := json.Marshal(cases)
	file := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(file, in, 0o600); err != nil {
		t.Fatal(err)
	}
	run := exec.CommandContext(t.Context(), "node", "verify.js", file)
	run.Dir = dir
	out, err := run.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v\n%s", err, out)
	}
	var verdicts []struct{ StandardWebhooks, Svix bool }
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(checks) {
		t.Fatalf("node printed %s (%v); want %d verdicts", out, err, len(checks))
	}
	for i, c := range checks {
		if verdicts[i].StandardWebhooks != c.want || verdicts[i].Svix != c.want {
			t.Errorf("%s: npm standardwebhooks %v, svix %v; want %v", c.name, verdicts[i].StandardWebhooks, verdicts[i].Svix, c.want)
		}
	}
}
