package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// tokenEndpoint is a real OAuth2 token endpoint on loopback (client
// credentials grant, RFC 6749 section 4.4) that issues tokens to one client
// and can say which it issued; a receiver asks it whether a token is good.
type tokenEndpoint struct {
	URL            string
	id, secret     string
	mu             sync.Mutex
	issued         []string
	revoked        map[string]bool
	scopes         []string // asked for at the last issue
	secretsOffered []string
}

func startTokenEndpoint(t *testing.T, id, secret string) *tokenEndpoint {
	te := &tokenEndpoint{id: id, secret: secret, revoked: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		gotID, gotSecret, ok := r.BasicAuth()
		if !ok {
			gotID, gotSecret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		te.mu.Lock()
		defer te.mu.Unlock()
		te.secretsOffered = append(te.secretsOffered, gotSecret)
		w.Header().Set("Content-Type", "application/json")
		if gotID != te.id || gotSecret != te.secret {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"unknown client or wrong secret"}`)
			return
		}
		tok := fmt.Sprintf("tok-%d", len(te.issued)+1)
		te.issued = append(te.issued, tok)
		te.scopes = strings.Fields(r.PostForm.Get("scope"))
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	te.URL = srv.URL + "/oauth/token"
	return te
}

// valid reports whether an Authorization header carries a token it issued
// and did not revoke.
func (te *tokenEndpoint) valid(auth string) bool {
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	te.mu.Lock()
	defer te.mu.Unlock()
	for _, t := range te.issued {
		if ok && t == tok && !te.revoked[tok] {
			return true
		}
	}
	return false
}

func (te *tokenEndpoint) count() int {
	te.mu.Lock()
	defer te.mu.Unlock()
	return len(te.issued)
}

func (te *tokenEndpoint) revokeAll() {
	te.mu.Lock()
	defer te.mu.Unlock()
	for _, t := range te.issued {
		te.revoked[t] = true
	}
}

// A webhook with an OAuth2 client: herald fetches a token from a real
// token endpoint, shares it between deliveries, fetches a new one once
// when the receiver refuses it (401), and a token it cannot fetch fails
// the attempt with the endpoint's reason, never the secret. The secret is
// never shown again.
func TestOAuth2ClientCredentialsToAReceiver(t *testing.T) {
	t.Parallel()
	const secret = "oauth2-client-secret-7Hq9"
	te := startTokenEndpoint(t, "herald-client", secret)
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(t)})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		if !te.valid(r.Header.Get("Authorization")) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "gateway", URL: rcv.URL, Events: []string{"license.created"},
		OAuth2: &client.OAuth2Client{TokenURL: te.URL, ClientID: "herald-client", ClientSecret: secret, Scopes: []string{"webhooks.write", "audit"}}})
	if err != nil {
		t.Fatal(err)
	}
	if hook.OAuth2 == nil || hook.OAuth2.ClientSecret != "********" || hook.OAuth2.ClientID != "herald-client" || len(hook.OAuth2.Scopes) != 2 {
		t.Fatalf("got oauth2 %+v; want the client with its secret masked", hook.OAuth2)
	}
	for range 3 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 20*time.Second, "three deliveries with a token", func() bool { return succeededLogs(h, hook.ID) == 3 })
	if n := te.count(); n != 1 {
		t.Errorf("the token endpoint issued %d tokens for three deliveries; want 1, shared", n)
	}
	if got := strings.Join(te.scopes, " "); got != "webhooks.write audit" {
		t.Errorf("got scopes %q asked for; want the webhook's", got)
	}

	// The receiver refuses the token it holds: herald fetches a new one,
	// once, and the delivery goes through in the same attempt.
	te.revokeAll()
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 20*time.Second, "the delivery after a 401", func() bool { return succeededLogs(h, hook.ID) == 4 })
	if n := te.count(); n != 2 {
		t.Errorf("the token endpoint issued %d tokens; want 2 (one more after the 401)", n)
	}
	for _, r := range rcv.Requests() {
		if strings.Contains(string(r.Body), secret) || strings.Contains(r.Header.Get("Authorization"), secret) {
			t.Fatal("the client secret reached the receiver")
		}
	}

	// A masked secret sent back keeps the stored one; a wrong one is
	// refused by the endpoint: the attempt fails with its reason.
	keep := client.OAuth2Client{TokenURL: te.URL, ClientID: "herald-client", ClientSecret: "********"}
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{OAuth2: &keep}); err != nil {
		t.Fatal(err)
	}
	wrong := client.OAuth2Client{TokenURL: te.URL, ClientID: "herald-client", ClientSecret: "not-the-secret-Zq1"}
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{OAuth2: &wrong}); err != nil {
		t.Fatal(err)
	}
	h.CreateLicense(nil)
	var failed client.EventLog
	heraldtest.Eventually(t, 20*time.Second, "the attempt without a token", func() bool {
		for _, l := range h.Logs("webhookId=" + hook.ID) {
			if l.Status == "retrying" || l.Status == "failed" {
				failed = h.Log(l.ID)
				return len(failed.Attempts) > 0
			}
		}
		return false
	})
	reason := *failed.Attempts[0].Error
	if !strings.Contains(reason, "OAuth2 token") || !strings.Contains(reason, "401 invalid_client") {
		t.Errorf("got reason %q; want the token endpoint's refusal", reason)
	}
	var raw json.RawMessage
	h.Must(http.StatusOK, "GET", "/v3/webhooks/"+hook.ID, nil, &raw)
	for _, s := range []string{secret, "not-the-secret-Zq1"} {
		if strings.Contains(reason, s) || strings.Contains(string(raw), s) {
			t.Errorf("a client secret was shown: %s / %s", reason, raw)
		}
	}
	if len(rcv.Requests()) != 5 { // 3, the refused one and its retry
		t.Errorf("the receiver got %d requests; want 5 (none without a token)", len(rcv.Requests()))
	}

	// Removing the client sends no Authorization header.
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{OAuth2: &client.OAuth2Client{}}); err != nil {
		t.Fatal(err)
	}
	if got := h.Webhook(hook.ID); got.OAuth2 != nil {
		t.Errorf("got oauth2 %+v after removing it; want none", got.OAuth2)
	}
}

// succeededLogs counts a webhook's succeeded logs.
func succeededLogs(h *heraldtest.Herald, webhookID string) int {
	n := 0
	for _, l := range h.Logs("webhookId=" + webhookID + "&status=succeeded") {
		if l.Status == "succeeded" {
			n++
		}
	}
	return n
}

// The OAuth2 client's fields are checked as saved, each refusal naming its
// field, and nothing is changed.
func TestOAuth2ClientIsCheckedAsSaved(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(t)})
	for _, tc := range []struct {
		oauth2 map[string]any
		field  string
	}{
		{map[string]any{"clientId": "a", "clientSecret": "b"}, "oauth2.tokenUrl"},
		{map[string]any{"tokenUrl": "ftp://x/token", "clientId": "a", "clientSecret": "b"}, "oauth2.tokenUrl"},
		{map[string]any{"tokenUrl": "https://example.com/t", "clientSecret": "b"}, "oauth2.clientId"},
		{map[string]any{"tokenUrl": "https://example.com/t", "clientId": "a", "clientSecret": "********"}, "oauth2.clientSecret"},
		{map[string]any{"tokenUrl": "https://example.com/t", "clientId": "a", "clientSecret": "b", "scopes": []string{"two words"}}, "oauth2.scopes[0]"},
		{map[string]any{"tokenUrl": "https://example.com/t", "clientId": "a", "clientSecret": "b", "extra": 1}, "oauth2"},
	} {
		var p struct {
			Errors []struct{ Field string }
		}
		body := map[string]any{"name": "n", "url": "https://example.com/h", "events": []string{"license.created"}, "oauth2": tc.oauth2}
		if got := h.Do("POST", "/v3/webhooks", body, &p); got != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
			t.Errorf("oauth2 %v: got %d %+v; want 422 naming %s", tc.oauth2, got, p.Errors, tc.field)
		}
	}
	var list struct{ Data []any }
	h.Must(http.StatusOK, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("got %d webhooks after refusals; want none", len(list.Data))
	}
}
