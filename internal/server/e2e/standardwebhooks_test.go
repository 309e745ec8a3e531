package e2e_test

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
// npm standardwebhooks and svix under node), not by herald's own code,
// each given the secret exactly as herald shows it: a delivery, a Test,
// and during a token rotation a delivery carrying both signatures, which
// each token verifies alone. A tampered body fails all.
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
	if key, ok := webhook.StandardKey(old); !ok || len(key) < 24 || len(key) > 64 {
		t.Fatalf("the token %q is not in the Standard Webhooks form (whsec_ and the base64 of 24 to 64 bytes)", old)
	}

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
		wh, err := standardwebhooks.NewWebhook(c.token) // as herald shows it
		if err != nil {
			t.Fatalf("the Go library refuses the secret %q: %v", c.token, err)
		}
		if err := wh.Verify(c.body, c.header); (err == nil) != c.want {
			t.Errorf("Go library, %s: verify = %v; want ok %v", c.name, err, c.want)
		}
		// And herald's own module, as a receiver uses it.
		if err := webhook.VerifyRequest([]string{c.token}, c.header, c.body, time.Now()); (err == nil) != c.want {
			t.Errorf("herald's webhook module, %s: verify = %v; want ok %v", c.name, err, c.want)
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
		cases = append(cases, nodeCase{c.token, headers, string(c.body)})
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

// A token given for a standard-webhooks webhook must be in the form its
// libraries read, "whsec_" and the base64 of 24 to 64 bytes: anything else
// is refused naming token, on create, on a token-only change and on a
// change of scheme; a herald webhook moved to standard-webhooks keeps its
// key and shows it in that form, which the Go library takes as it is.
func TestStandardWebhooksTokensAreInTheLibrariesForm(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	for _, tok := range []string{"whsec_not base64!", "my-own-token-of-enough-length", "whsec_" + "c2hvcnQ=", // 5 bytes
		webhook.StandardSecret(string(make([]byte, 65)))} {
		code := h.Do("POST", "/v3/webhooks", map[string]any{"name": "w", "url": rcv.URL, "events": []string{"license.created"},
			"signatureScheme": "standard-webhooks", "token": tok}, nil)
		if code != 422 {
			t.Errorf("create with token %q: %d; want 422", tok, code)
		}
	}
	good := webhook.StandardSecret("0123456789abcdef0123456789abcdef")
	sw, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "sw", URL: rcv.URL, Events: []string{"license.created"},
		SignatureScheme: "standard-webhooks", Token: good})
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Errors []struct{ Field string } }
	if code := h.Do("PATCH", "/v3/webhooks/"+sw.ID, map[string]any{"token": "my-own-token-of-enough-length"}, &p); code != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "token" {
		t.Errorf("a token-only change in another form: %d %+v; want 422 naming token", code, p)
	}

	// A herald webhook with a token of its own, moved to standard-webhooks.
	const mine = "my-own-token-of-enough-length"
	hw, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "hw", URL: rcv.URL, Events: []string{"license.created"}, Token: mine})
	if err != nil {
		t.Fatal(err)
	}
	scheme := "standard-webhooks"
	if _, err := h.API.UpdateWebhook(ctx, hw.ID, client.WebhookUpdate{SignatureScheme: &scheme}); err != nil {
		t.Fatal(err)
	}
	shown, err := h.API.WebhookToken(ctx, hw.ID)
	if err != nil {
		t.Fatal(err)
	}
	if shown != webhook.StandardSecret(mine) {
		t.Fatalf("the moved webhook's token %q; want %q, the same key in the Standard Webhooks form", shown, webhook.StandardSecret(mine))
	}
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the two deliveries", func() bool { return rcv.Count() == 2 })
	lib, err := standardwebhooks.NewWebhook(shown)
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	for _, r := range rcv.Requests() {
		if lib.Verify(r.Body, r.Header) == nil {
			verified++
		}
	}
	if verified != 1 {
		t.Errorf("the Go library verified %d deliveries with the moved webhook's shown token; want its one", verified)
	}
}
