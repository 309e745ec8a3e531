package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

func TestAnotherAccountsTokenSeesNothing(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testAnotherAccountsTokenSeesNothing)
}

func testAnotherAccountsTokenSeesNothing(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("mine", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10e9, "a log", func() bool { return len(h.Logs("")) == 1 })
	logID := h.Logs("")[0].ID

	other := auth.NewAPIToken()
	hash, _ := auth.HashPassword("x")
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{
		AccountName: "B", OwnerEmail: "b@example.com", PasswordHash: hash, TokenHash: auth.HashToken(other),
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v3/webhooks/" + hook.ID},
		{"PATCH", "/v3/webhooks/" + hook.ID},
		{"DELETE", "/v3/webhooks/" + hook.ID},
		{"GET", "/v3/webhooks/" + hook.ID + "/token"},
		{"POST", "/v3/webhooks/" + hook.ID + "/test"},
		{"POST", "/v3/webhooks/" + hook.ID + "/token/rotate"},
		{"POST", "/v3/webhooks/" + hook.ID + "/token/rotate/finish"},
		{"GET", "/v3/webhook-event-logs/" + logID},
		{"POST", "/v3/webhook-event-logs/" + logID + "/resend"},
	} {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"name": "stolen"}
		}
		if got := h.DoAs(other, c.method, c.path, body, nil); got != http.StatusNotFound {
			t.Errorf("account B: %s %s = %d; want 404", c.method, c.path, got)
		}
	}
	var list struct{ Data []any }
	h.DoAs(other, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("account B lists %d webhooks", len(list.Data))
	}
	h.DoAs(other, "GET", "/v3/webhook-event-logs", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("account B lists %d logs", len(list.Data))
	}
	if got := h.Webhook(hook.ID).Name; got != "mine" {
		t.Errorf("name %q after B's attempt", got)
	}
	if got := h.DoAs("hrld_wrong", "GET", "/v3/webhooks", nil, nil); got != 401 {
		t.Errorf("bad token: %d; want 401", got)
	}
	if got := h.DoAs("", "GET", "/v3/webhooks", nil, nil); got != 401 {
		t.Errorf("no token: %d; want 401", got)
	}
}

func TestBadWebhookInputNamesTheFieldAndChangesNothing(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testBadWebhookInputNamesTheFieldAndChangesNothing)
}

func testBadWebhookInputNamesTheFieldAndChangesNothing(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	ok := map[string]any{"name": "n", "url": "https://example.com/hook", "events": []string{"license.created"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"url not a url", with("url", "not a url"), 422, "url"},
		{"ftp scheme", with("url", "ftp://example.com/x"), 422, "url"},
		{"url missing", with("url", nil), 422, "url"},
		{"unknown event", with("events", []string{"license.exploded"}), 422, "events[0]"},
		{"no events", with("events", []string{}), 422, "events"},
		{"empty name", with("name", "  "), 422, "name"},
		{"name wrong type", with("name", 7), 422, "name"},
		{"unknown field", with("colour", "red"), 422, "colour"},
		{"short token", with("token", "abc"), 422, "token"},
		{"malformed JSON", `{"name": "n",`, 400, ""},
		{"not an object", `[1,2]`, 400, ""},
		{"trailing brace", `{"name": "n", "url": "https://example.com/h", "events": ["license.created"]}}`, 400, ""},
		{"two objects", `{"name": "n"} {"name": "m"}`, 400, ""},
		{"oversize body", `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p struct {
				Status int
				Title  string
				Detail string
				Errors []struct{ Field, Detail string }
			}
			got := h.Do("POST", "/v3/webhooks", tt.body, &p)
			if got != tt.status || p.Status != tt.status || p.Detail == "" {
				t.Fatalf("status %d (problem %+v); want %d", got, p, tt.status)
			}
			if tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field) {
				t.Errorf("errors %+v; want field %q named", p.Errors, tt.field)
			}
		})
	}
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("bad input created %d webhooks", len(list.Data))
	}

	hook := h.CreateWebhook("keep", "https://example.com/a", "license.created")
	if got := h.Do("PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"name": "new", "url": "gopher://x"}, nil); got != 422 {
		t.Errorf("PATCH with a bad url: %d; want 422", got)
	}
	if w := h.Webhook(hook.ID); w.Name != "keep" || w.URL != "https://example.com/a" {
		t.Errorf("a refused PATCH changed the webhook: %+v", w)
	}
}

func TestWebhookLifecycle(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testWebhookLifecycle)
}

func testWebhookLifecycle(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	hook := h.CreateWebhook("crm", "https://example.com/a", "license.created", "license.deleted")
	if hook.Status != "Healthy" || !hook.Enabled || !strings.HasPrefix(hook.Token, "whsec_") {
		t.Fatalf("new webhook %+v", hook)
	}
	var tok struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+hook.ID+"/token", nil, &tok)
	if tok.Token != hook.Token {
		t.Errorf("token %q; want %q", tok.Token, hook.Token)
	}
	var got heraldtest.Webhook
	h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &got)
	if got.Token != "" {
		t.Error("GET reveals the token")
	}
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false, "events": []string{"license.renewed"}, "token": "my-own-token-0123456789"}, &got)
	if got.Enabled || len(got.Events) != 1 || got.Events[0] != "license.renewed" {
		t.Errorf("after PATCH %+v", got)
	}
	h.Must(200, "GET", "/v3/webhooks/"+hook.ID+"/token", nil, &tok)
	if tok.Token != "my-own-token-0123456789" {
		t.Errorf("token after PATCH %q", tok.Token)
	}
	for range 3 {
		h.CreateWebhook("more", "https://example.com/b", "license.created")
	}
	var page struct {
		Data       []heraldtest.Webhook
		NextCursor *string
	}
	h.Must(200, "GET", "/v3/webhooks?limit=3", nil, &page)
	if len(page.Data) != 3 || page.NextCursor == nil || page.Data[0].Name != "more" {
		t.Fatalf("first page %+v", page)
	}
	h.Must(200, "GET", "/v3/webhooks?limit=3&cursor="+*page.NextCursor, nil, &page)
	if len(page.Data) != 1 || page.NextCursor != nil || page.Data[0].ID != hook.ID {
		t.Fatalf("second page %+v", page)
	}
	h.Must(204, "DELETE", "/v3/webhooks/"+hook.ID, nil, nil)
	if got := h.Do("GET", "/v3/webhooks/"+hook.ID, nil, nil); got != 404 {
		t.Errorf("after delete: %d; want 404", got)
	}
}

func TestWrongMethodAndCharsetAreRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	req, _ := http.NewRequest("PUT", h.URL+"/v3/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST" {
		t.Errorf("PUT /v3/webhooks: %d, Allow %q; want 405 with Allow: GET, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := h.Do("GET", "/v3/nothing-here", nil, nil); got != 404 {
		t.Errorf("unknown path: %d; want 404", got)
	}
	req, _ = http.NewRequest("POST", h.URL+"/v3/webhooks", strings.NewReader(`{"name":"n"}`))
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Content-Type", "application/json; charset=latin1")
	resp, err = h.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("latin1 body: %d; want 415", resp.StatusCode)
	}
}
