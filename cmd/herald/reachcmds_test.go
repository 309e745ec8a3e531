package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/receivertest"
)

// webhooks create and update set a thin payload, a client certificate
// from PEM files and an OAuth2 client (its secret from a file); an update
// of some OAuth2 flags keeps the rest, the secret included; show prints
// the certificate's subject and never the key or secret; bad flags are
// refused before any call, naming the flag.
func TestWebhooksReachFlags(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	a := startApp(t)
	p := startServe(t, env, freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	run := runner(t, cli)
	dir := t.TempDir()
	ca := receivertest.NewCA(t, "cli CA")
	pair := ca.Issue(t, "cli-client", "Example", time.Now().Add(90*24*time.Hour))
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const secret = "cli-oauth2-secret-Q8"
	out := run(0, "webhooks", "create", "--name", "reach", "--url", a.url, "--events", "license.created", "--payload", "thin",
		"--client-cert", write("c.pem", pair.CertPEM), "--client-key", write("k.pem", pair.KeyPEM), "--client-ca", write("ca.pem", ca.PEM),
		"--oauth2-token-url", a.url+"/token", "--oauth2-client-id", "cli", "--oauth2-client-secret", "@"+write("secret", secret+"\n"),
		"--oauth2-scopes", "read,write", "--json")
	var w client.Webhook
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if w.Payload != "thin" || w.TLS == nil || w.TLS.Subject != "CN=cli-client,O=Example" || w.OAuth2 == nil || strings.Join(w.OAuth2.Scopes, " ") != "read write" {
		t.Fatalf("webhooks create printed %s", out)
	}
	run(0, "webhooks", "update", w.ID, "--oauth2-scopes", "audit")
	out = run(0, "webhooks", "get", w.ID)
	if !strings.Contains(out, "Client certificate:  CN=cli-client,O=Example") || !strings.Contains(out, "as cli, scopes audit") || !strings.Contains(out, "Payload:") {
		t.Errorf("webhooks get printed %q; want the certificate's subject and the new scopes", out)
	}
	if strings.Contains(out, secret) || strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("webhooks get printed a secret: %q", out)
	}
	out = run(0, "webhooks", "update", w.ID, "--no-client-cert", "--payload", "full", "--json")
	if err := json.Unmarshal([]byte(out), &w); err != nil || w.TLS != nil || w.Payload != "full" || w.OAuth2 == nil {
		t.Errorf("webhooks update --no-client-cert --payload full printed %s", out)
	}
	if out := run(2, "webhooks", "update", w.ID, "--payload", "slim"); !strings.Contains(out, "--payload") {
		t.Errorf("--payload slim: %q; want the flag named", out)
	}
	if out := run(2, "webhooks", "create", "--name", "x", "--url", a.url, "--events", "license.created", "--client-cert", filepath.Join(dir, "c.pem")); !strings.Contains(out, "--client-key") {
		t.Errorf("--client-cert alone: %q; want --client-key asked for", out)
	}
	if out := run(1, "webhooks", "update", w.ID, "--client-cert", filepath.Join(dir, "c.pem"), "--client-key", filepath.Join(dir, "ca.pem")); !strings.Contains(out, "tls.clientKey") {
		t.Errorf("a key that is no key: %q; want a 422 naming tls.clientKey", out)
	}
}
