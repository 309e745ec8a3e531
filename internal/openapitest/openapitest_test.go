package openapitest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/openapi"
	"github.com/heraldhq/herald/internal/openapitest"
)

const (
	webhookID = "01937a4e-8f2b-7c3d-9e4f-5a6b7c8d9e0f"
	accountID = "01937a4e-0000-7c3d-9e4f-5a6b7c8d9e0f"
	now       = "2026-11-21T08:07:13.120Z"
)

// recorder is a testing.TB that keeps what the transport reports through
// Errorf instead of failing the test, so that tests can assert on it.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprint(args...))
}

func (r *recorder) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, title string, errs ...map[string]string) {
	p := map[string]any{
		"type":   "https://herald.dev/problems/" + strings.ToLower(strings.ReplaceAll(title, " ", "-")),
		"title":  title,
		"status": status,
		"detail": title + ".",
	}
	if len(errs) > 0 {
		p["errors"] = errs
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

func webhook() map[string]any {
	return map[string]any{
		"id":        webhookID,
		"name":      "Send license emails ✉️",
		"url":       "https://example.com/hook",
		"events":    []string{"license.created"},
		"enabled":   true,
		"status":    "Healthy",
		"createdAt": now,
		"updatedAt": now,
		// Required, null when no token rotation is under way.
		"tokenRotation": nil,
		"filter":        nil,
		"headers":       map[string]string{},

		"undeliveredCount": 0,
		"signatureScheme":  "herald",
		"rateLimit":        nil,
		"retryPolicy":      map[string]any{"maxAttempts": 5, "backoff": "fixed", "intervalSeconds": 300, "maxIntervalSeconds": 300},
		"type":             "http",
	}
}

// fakeAPI answers a few documented calls correctly and others with shapes
// the document does not allow.
func fakeAPI(received chan<- string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v3/account", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			problem(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": accountID, "name": "Acme", "notificationEmail": "ops@example.com",
			"createdAt": now, "updatedAt": now,
		})
	})
	// Documented: never checks the token, to show an unauthenticated 2xx.
	mux.HandleFunc("GET /v3/webhooks/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != webhookID {
			problem(w, http.StatusNotFound, "Not found")
			return
		}
		writeJSON(w, http.StatusOK, webhook())
	})
	// Undocumented shape: a list item lacks status and leaks the token.
	mux.HandleFunc("GET /v3/webhooks", func(w http.ResponseWriter, r *http.Request) {
		item := webhook()
		delete(item, "status")
		item["token"] = "0123456789abcdef0123"
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{item}, "nextCursor": nil})
	})
	// Answers 201 to anything when asked to, 422 otherwise.
	mux.HandleFunc("POST /v3/webhooks", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if received != nil {
			received <- string(body)
		}
		if r.Header.Get("X-Test-Accept") == "" {
			problem(w, http.StatusUnprocessableEntity, "Validation failed", map[string]string{"field": "name", "detail": "must not be empty"})
			return
		}
		created := webhook()
		created["token"] = "0123456789abcdef0123"
		writeJSON(w, http.StatusCreated, created)
	})
	mux.HandleFunc("GET /v3/nope", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{})
	})
	// Times without milliseconds.
	mux.HandleFunc("GET /v3/products", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{map[string]any{
			"id": webhookID, "name": "App", "metadata": map[string]any{},
			"createdAt": "2026-11-21T08:07:13Z", "updatedAt": now,
		}}, "nextCursor": nil})
	})
	mux.HandleFunc("DELETE /v3/products/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	// Undocumented status.
	mux.HandleFunc("GET /v3/users", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusTeapot, "Teapot")
	})
	// 401 without its WWW-Authenticate header.
	mux.HandleFunc("GET /v3/activations/{id}", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusUnauthorized, "Unauthorized")
	})
	// A problem sent as plain JSON.
	mux.HandleFunc("GET /v3/licenses/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"type": "about:blank", "title": "Not found", "status": 404, "detail": "no"})
	})
	// A documented empty list that ignores its query.
	mux.HandleFunc("GET /v3/trial-activations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{}, "nextCursor": nil})
	})
	mux.HandleFunc("GET /v3/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.JSON())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	return mux
}

func TestTransport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(fakeAPI(nil))
	t.Cleanup(srv.Close)

	const validCreate = `{"name":"Hook","url":"https://example.com/hook","events":["license.created"]}`
	tests := []struct {
		name         string
		method, path string
		body         string
		noAuth       bool
		accept       bool   // ask the fake to answer 201
		want         string // substring of the one report expected; "" for none
	}{
		{name: "documented answer", method: "GET", path: "/v3/webhooks/" + webhookID},
		{name: "undocumented shape", method: "GET", path: "/v3/webhooks", want: "does not match the API document"},
		{name: "undocumented route", method: "GET", path: "/v3/nope", want: "not in the API document"},
		{name: "undocumented method", method: "PUT", path: "/v3/webhooks/" + webhookID, body: "{}", want: "not in the API document"},
		{name: "invalid request refused", method: "POST", path: "/v3/webhooks", body: `{"name":""}`},
		{name: "invalid request accepted", method: "POST", path: "/v3/webhooks", body: `{"name":""}`, accept: true, want: "answered 201 to a request the API document rejects"},
		{name: "valid request accepted", method: "POST", path: "/v3/webhooks", body: validCreate, accept: true},
		{name: "missing token refused", method: "GET", path: "/v3/account", noAuth: true},
		{name: "missing token accepted", method: "GET", path: "/v3/webhooks/" + webhookID, noAuth: true, want: "no bearer token"},
		{name: "id that is not a UUID refused", method: "GET", path: "/v3/webhooks/not-a-uuid"},
		{name: "time without milliseconds", method: "GET", path: "/v3/products", want: "exactly three fractional digits"},
		{name: "no content", method: "DELETE", path: "/v3/products/" + webhookID},
		{name: "undocumented status", method: "GET", path: "/v3/users", want: "answer 418 is not documented"},
		{name: "missing header", method: "GET", path: "/v3/activations/" + webhookID, want: "WWW-Authenticate"},
		{name: "problem as plain JSON", method: "GET", path: "/v3/licenses/" + webhookID, want: "Content-Type"},
		{name: "empty cursor", method: "GET", path: "/v3/trial-activations?cursor=&limit=10"},
		{name: "limit out of range accepted", method: "GET", path: "/v3/trial-activations?limit=0", want: "answered 200 to a request the API document rejects"},
		{name: "document needs no token", method: "GET", path: "/v3/openapi.json", noAuth: true},
		{name: "outside /v3 unchecked", method: "GET", path: "/healthz"},
		{name: "unknown path outside /v3 unchecked", method: "GET", path: "/portal/nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			client := &http.Client{Transport: openapitest.Transport(rec, srv.Client().Transport)}
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if !tt.noAuth {
				req.Header.Set("Authorization", "Bearer test-token")
			}
			if tt.accept {
				req.Header.Set("X-Test-Accept", "yes")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("read body after the transport: %v", err)
			}

			got := rec.reported()
			for _, r := range got {
				t.Logf("reported: %s", r)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("reported %q; want nothing", got)
			case tt.want != "" && len(got) != 1:
				t.Errorf("reported %q; want one report containing %q", got, tt.want)
			case tt.want != "" && !strings.Contains(got[0], tt.want):
				t.Errorf("reported %q; want it to contain %q", got[0], tt.want)
			}
		})
	}
}

// TestTransportKeepsBodies checks that the server gets the request body and
// the caller the response body, byte for byte, after both were checked.
func TestTransportKeepsBodies(t *testing.T) {
	t.Parallel()
	received := make(chan string, 1)
	srv := httptest.NewServer(fakeAPI(received))
	t.Cleanup(srv.Close)
	rec := &recorder{TB: t}
	client := &http.Client{Transport: openapitest.Transport(rec, srv.Client().Transport)}

	const sent = `{"name":"Zoë's hook 🚀","url":"https://example.com/hook","events":["license.created","license.renewed"]}`
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v3/webhooks", strings.NewReader(sent))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer test-token")
	req.Header.Set("X-Test-Accept", "yes")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	if got := <-received; got != sent {
		t.Errorf("server got body %q; want %q", got, sent)
	}
	var created struct{ ID, Token string }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil {
		t.Fatalf("decode response after the transport: %v", err)
	}
	if created.ID != webhookID || created.Token == "" {
		t.Errorf("got id %q, token %q; want id %q and a token", created.ID, created.Token, webhookID)
	}
	if got := rec.reported(); len(got) > 0 {
		t.Errorf("reported %q; want nothing", got)
	}
}
