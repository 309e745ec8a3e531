package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// account is an account with one of every resource the API has, and the
// secrets made for it, for the tests that walk every call of the API
// reference.
type account struct {
	h *heraldtest.Herald
	// ids names a resource for each path parameter of the reference:
	// "/v3/webhooks/{id}" → the webhook's id, and so on.
	ids map[string]string
	// secrets are every secret value made, by what it is: each must
	// never appear in an answer to a read token.
	secrets     map[string]string
	write, read string // API tokens
}

// withEverything makes an account's resources and secrets: a webhook with
// its own token, a custom header and a rotation under way (its next
// token); a write and a read API token; a product, user, license,
// activation, release with a file, trial activation; event logs; a
// recovery.
func withEverything(t *testing.T, h *heraldtest.Herald) *account {
	t.Helper()
	ctx := context.Background()
	a := &account{h: h, ids: map[string]string{}, secrets: map[string]string{"bootstrap token": h.Token, "owner password": h.Password}}
	rcv := heraldtest.NewReceiver(t)
	const token = "whsec_walk_token_made_by_the_test_0123456789"
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "w", URL: rcv.URL, Token: token,
		Events: []string{"license.created", "license.deleted"}, Headers: map[string]string{"X-Receiver-Key": "header-value-made-by-the-test-4242"}})
	if err != nil {
		t.Fatal(err)
	}
	a.secrets["webhook token"], a.secrets["header value"] = token, "header-value-made-by-the-test-4242"
	if _, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, next, err := h.API.WebhookTokens(ctx, hook.ID)
	if err != nil || next == "" {
		t.Fatalf("the next token: %q, %v", next, err)
	}
	a.secrets["next token"] = next
	a.ids["/v3/webhooks/{id}"] = hook.ID
	for _, scope := range []string{"write", "read"} {
		tok, err := h.API.CreateAPIToken(ctx, client.APITokenCreate{Name: scope, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		a.secrets[scope+" API token"] = tok.Secret
		a.ids["/v3/api-tokens/{id}"] = tok.ID
		if scope == "write" {
			a.write = tok.Secret
		} else {
			a.read = tok.Secret
		}
	}

	var product, user, license, activation, release, trial struct {
		ID  string
		Key string
	}
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	h.Must(201, "POST", "/v3/users", map[string]any{"email": "u@example.com"}, &user)
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": product.ID, "userId": user.ID}, &license)
	h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": license.Key, "fingerprint": "fp"}, &activation)
	h.Must(201, "POST", "/v3/releases", map[string]any{"productId": product.ID, "version": "1.0.0"}, &release)
	var file struct{ ID string }
	h.Must(201, "POST", "/v3/releases/"+release.ID+"/files", map[string]any{"filename": "app.zip", "size": 1024}, &file)
	h.Must(201, "POST", "/v3/trial-activations", map[string]any{"productId": product.ID, "fingerprint": "fp"}, &trial)
	a.ids["/v3/products/{id}"], a.ids["/v3/users/{id}"], a.ids["/v3/licenses/{id}"] = product.ID, user.ID, license.ID
	a.ids["/v3/activations/{id}"], a.ids["/v3/releases/{id}"], a.ids["/v3/trial-activations/{id}"] = activation.ID, release.ID, trial.ID
	a.ids["/v3/releases/{id}/files/{fileId}"] = file.ID
	a.ids["/v3/event-types/{kind}/schema"] = "license.created"

	heraldtest.Eventually(t, 30*time.Second, "the license's delivery", func() bool { return rcv.Count() >= 1 })
	h.Settled()
	logs := h.Logs("")
	if len(logs) == 0 {
		t.Fatal("no event log")
	}
	a.ids["/v3/webhook-event-logs/{id}"] = logs[0].ID
	rec, err := h.API.Recover(ctx, hook.ID, client.RecoverRequest{Since: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	a.ids["/v3/webhooks/{id}/recoveries/{rid}"] = rec.ID

	// Another account, by the operator: its first credentials are secrets
	// too, and its id the operator's calls' parameter.
	other, err := client.New(h.URL, operatorToken, h.Client).CreateAccount(ctx, client.AccountCreate{Name: "other", OwnerEmail: "other@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	a.secrets["another account's API token"], a.secrets["another account's password"] = other.APIToken, other.OwnerPassword
	a.ids["/v3/operator/accounts/{id}"] = other.Account.ID
	return a
}

// call is one operation of the API reference.
type call struct{ method, path string }

// referenceCalls lists every operation of the API reference.
func referenceCalls(t *testing.T) []call {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "openapi", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var calls []call
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "post", "patch", "put", "delete":
				calls = append(calls, call{strings.ToUpper(method), path})
			}
		}
	}
	slices.SortFunc(calls, func(x, y call) int { return strings.Compare(x.path+x.method, y.path+y.method) })
	return calls
}

// concrete fills a reference path's parameters with the account's
// resources.
func (a *account) concrete(t *testing.T, path string) string {
	t.Helper()
	tmpl := strings.Split(path, "/")
	segs := slices.Clone(tmpl)
	for i, s := range tmpl {
		if !strings.HasPrefix(s, "{") {
			continue
		}
		prefix := strings.Join(tmpl[:i+1], "/")
		id, ok := a.ids[prefix]
		if !ok {
			// The longest template that ends at this parameter.
			for tmpl, v := range a.ids {
				if strings.HasPrefix(tmpl, prefix) && strings.Count(tmpl, "{") == strings.Count(prefix, "{") {
					id, ok = v, true
				}
			}
		}
		if !ok {
			t.Fatalf("no resource for %s in %s", s, path)
		}
		segs[i] = id
	}
	return strings.Join(segs, "/")
}

// get calls the API with token and returns the status and the body.
func (a *account) do(t *testing.T, token, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.h.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// A read token never sees a secret: every GET of the reference, made with
// a read token over an account holding every kind of secret, answers
// without any of them (the webhook's token and next token, a header's
// value, the API tokens, the owner's password). The same walk with a
// write token finds the webhook's tokens where they are shown, so the
// search can find what it looks for.
func TestReadTokensSeeNoSecret(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken})
	a := withEverything(t, h)
	shown := map[string]bool{}
	for _, c := range referenceCalls(t) {
		if c.method != "GET" {
			continue
		}
		path := a.concrete(t, c.path)
		token := a.read
		if strings.HasPrefix(c.path, "/v3/operator/") {
			token = operatorToken // the operator's calls take no account token
		}
		code, _, body := a.do(t, token, "GET", path, "")
		if code >= 500 {
			t.Errorf("GET %s with a read token: %d", c.path, code)
		}
		for what, secret := range a.secrets {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s with a read token (%d) shows the %s", c.path, code, what)
			}
		}
		if c.path == "/v3/webhooks/{id}/token" && code != http.StatusForbidden {
			t.Errorf("GET %s with a read token: %d; want 403", c.path, code)
		}
		if !strings.HasPrefix(c.path, "/v3/operator/") {
			_, _, body := a.do(t, a.write, "GET", path, "")
			for what, secret := range a.secrets {
				if strings.Contains(body, secret) {
					shown[what] = true
				}
			}
		}
	}
	for _, want := range []string{"webhook token", "next token"} {
		if !shown[want] {
			t.Errorf("no GET with a write token showed the %s; the search is not finding what it looks for", want)
		}
	}
	if code, _, body := a.do(t, a.write, "GET", "/v3/webhooks/"+a.ids["/v3/webhooks/{id}"]+"?reveal=headers", ""); code != 200 || !strings.Contains(body, a.secrets["header value"]) {
		t.Errorf("reveal=headers with a write token: %d; want the header's value", code)
	}
}

// Every call of the reference refuses a query parameter it does not take
// with 422 naming it, before it does anything: a typo (?webhook= for
// ?webhookId=) must not answer every log of the account unfiltered.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken})
	a := withEverything(t, h)
	for _, c := range referenceCalls(t) {
		token := a.write
		if strings.HasPrefix(c.path, "/v3/operator/") {
			token = operatorToken
		}
		body := ""
		if c.method == "POST" || c.method == "PATCH" || c.method == "PUT" {
			body = "{}"
		}
		code, _, answer := a.do(t, token, c.method, a.concrete(t, c.path)+"?limit=5&webhook=x&limit=6", body)
		var p struct {
			Errors []struct{ Field, Detail string }
		}
		json.Unmarshal([]byte(answer), &p)
		named := slices.ContainsFunc(p.Errors, func(e struct{ Field, Detail string }) bool { return e.Field == "webhook" })
		if code != http.StatusUnprocessableEntity || !named {
			t.Errorf("%s %s?webhook=x: %d %s; want 422 naming webhook", c.method, c.path, code, answer)
		}
	}
	// Nothing changed: every resource is still there.
	for tmpl, id := range a.ids {
		if strings.Contains(tmpl, "{kind}") || strings.Contains(tmpl, "{fileId}") || strings.Contains(tmpl, "api-tokens") || strings.Contains(tmpl, "/operator/") {
			continue
		}
		if code, _, _ := a.do(t, a.write, "GET", a.concrete(t, tmpl), ""); code != http.StatusOK {
			t.Errorf("GET %s after the refused calls: %d; want 200 (%s still there)", tmpl, code, id)
		}
	}
	if _, _, body := a.do(t, operatorToken, "GET", "/v3/operator/accounts", ""); !strings.Contains(body, a.ids["/v3/operator/accounts/{id}"]) {
		t.Errorf("the operator's account is gone after the refused calls")
	}
	// The parameters a call takes still work.
	if code, _, body := a.do(t, a.write, "GET", "/v3/webhook-event-logs?webhookId="+a.ids["/v3/webhooks/{id}"]+"&limit=5", ""); code != 200 || !strings.Contains(body, `"data"`) {
		t.Errorf("GET /v3/webhook-event-logs?webhookId=…&limit=5: %d %s", code, body)
	}
}
