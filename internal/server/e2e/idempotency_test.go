package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// answer is one raw API answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// postKeyed POSTs body to path with token and, unless key is empty, an
// Idempotency-Key.
func postKeyed(t *testing.T, h *heraldtest.Herald, token, path, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// licenseCount counts the account's licenses through the API.
func licenseCount(t *testing.T, h *heraldtest.Herald) int {
	t.Helper()
	var l struct{ Data []json.RawMessage }
	h.Must(200, "GET", "/v3/licenses?limit=100", nil, &l)
	return len(l.Data)
}

// newLicenseBody creates a product and returns a license create body for it.
func newLicenseBody(t *testing.T, h *heraldtest.Herald) string {
	t.Helper()
	var p resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &p)
	return fmt.Sprintf(`{"productId":%q,"validity":86400}`, idOf(p))
}

// sameAnswer fails unless replay is first again, byte for byte, marked
// as replayed.
func sameAnswer(t *testing.T, first, replay answer) {
	t.Helper()
	if replay.status != first.status || !bytes.Equal(replay.body, first.body) ||
		replay.header.Get("Location") != first.header.Get("Location") ||
		replay.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Errorf("replay: %d %q (Location %q); want the first answer %d %q (Location %q)",
			replay.status, replay.body, replay.header.Get("Location"), first.status, first.body, first.header.Get("Location"))
	}
	if replay.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay has Idempotent-Replayed %q; want true", replay.header.Get("Idempotent-Replayed"))
	}
}

// TestIdempotentReplayCreatesOneLicense: an idempotent replay of POST
// /v3/licenses creates one license and one event, which a real receiver
// gets once; the same key with another body is refused, and answers of
// refused requests (4xx) replay too.
func TestIdempotentReplayCreatesOneLicense(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcv, hook := watch(t, h, "license.created")
		body := newLicenseBody(t, h)
		first := postKeyed(t, h, h.Token, "/v3/licenses", "create-1", body)
		if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %s, replayed %q; want 201, not replayed", first.status, first.body, first.header.Get("Idempotent-Replayed"))
		}
		for range 3 {
			sameAnswer(t, first, postKeyed(t, h, h.Token, "/v3/licenses", "create-1", body))
		}
		if n := licenseCount(t, h); n != 1 {
			t.Errorf("licenses: %d; want 1", n)
		}
		if logs := h.Logs("webhookId=" + hook.ID); len(logs) != 1 {
			t.Errorf("event logs: %d; want 1", len(logs))
		}
		receive(t, rcv, 1)

		other := postKeyed(t, h, h.Token, "/v3/licenses", "create-1", strings.Replace(body, "86400", "3600", 1))
		if other.status != 422 || !bytes.Contains(other.body, []byte("idempotency-key-reused")) {
			t.Errorf("same key, other body: %d %s; want 422 idempotency-key-reused", other.status, other.body)
		}
		onPath := postKeyed(t, h, h.Token, "/v3/products", "create-1", body)
		if onPath.status != 422 {
			t.Errorf("same key on another path: %d %s; want 422", onPath.status, onPath.body)
		}

		invalid := postKeyed(t, h, h.Token, "/v3/licenses", "bad-body", `{"productId":"nope"}`)
		if invalid.status != 422 {
			t.Fatalf("invalid body: %d %s; want 422", invalid.status, invalid.body)
		}
		sameAnswer(t, invalid, postKeyed(t, h, h.Token, "/v3/licenses", "bad-body", `{"productId":"nope"}`))
		if n := licenseCount(t, h); n != 1 {
			t.Errorf("licenses after the refused ones: %d; want 1", n)
		}
	})
}

// TestConcurrentIdempotentTriesCreateOnce: tries of one key at once get one
// 201 from the try that ran, and each other try a 409 or the replay of it.
func TestConcurrentIdempotentTriesCreateOnce(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		body := newLicenseBody(t, h)
		const tries = 8
		answers := make([]answer, tries)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Go(func() { answers[i] = postKeyed(t, h, h.Token, "/v3/licenses", "together", body) })
		}
		wg.Wait()
		ran := 0
		for _, a := range answers {
			switch {
			case a.status == 201 && a.header.Get("Idempotent-Replayed") == "":
				ran++
			case a.status == 201, a.status == 409:
			default:
				t.Errorf("a try answered %d %s; want 201 or 409", a.status, a.body)
			}
		}
		if ran != 1 {
			t.Errorf("%d tries ran; want 1", ran)
		}
		if n := licenseCount(t, h); n != 1 {
			t.Errorf("licenses: %d; want 1", n)
		}
	})
}

// TestIdempotencyKeysHoldAcrossRestartsAndAreScopedToTheirAccount: a key's
// answer is in the database, so a restarted herald replays it; another
// account's same key is its own.
func TestIdempotencyKeysHoldAcrossRestartsAndAreScopedToTheirAccount(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		body := newLicenseBody(t, h)
		first := postKeyed(t, h, h.Token, "/v3/licenses", "across-restarts", body)
		if first.status != 201 {
			t.Fatalf("first: %d %s; want 201", first.status, first.body)
		}
		h.Stop()
		h = heraldtest.Start(t, h.Options)
		sameAnswer(t, first, postKeyed(t, h, h.Token, "/v3/licenses", "across-restarts", body))
		if n := licenseCount(t, h); n != 1 {
			t.Errorf("licenses: %d; want 1", n)
		}

		token := auth.NewAPIToken()
		if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{AccountName: "Other",
			OwnerEmail: "other@example.com", PasswordHash: "x", TokenHash: auth.HashToken(token)}); err != nil {
			t.Fatal(err)
		}
		const product = `{"name":"Same"}`
		mine := postKeyed(t, h, h.Token, "/v3/products", "per-account", product)
		theirs := postKeyed(t, h, token, "/v3/products", "per-account", product)
		if mine.status != 201 || theirs.status != 201 || theirs.header.Get("Idempotent-Replayed") != "" ||
			bytes.Equal(mine.body, theirs.body) {
			t.Errorf("one key in two accounts: %d %s and %d %s (replayed %q); want two new products",
				mine.status, mine.body, theirs.status, theirs.body, theirs.header.Get("Idempotent-Replayed"))
		}
	})
}

// TestIdempotencyKeyIsChecked: a malformed key is refused, naming the
// header, before anything is done; GET ignores the header.
func TestIdempotencyKeyIsChecked(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	tests := []struct {
		name string
		key  string
		want int
	}{
		{"255 characters", strings.Repeat("k", 255), 201},
		{"256 characters", strings.Repeat("k", 256), 422},
		{"not ASCII", "clé", 422},
		{"control character", "a\tb", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := postKeyed(t, h, h.Token, "/v3/products", tt.key, `{"name":"App"}`)
			if a.status != tt.want {
				t.Fatalf("status %d %s; want %d", a.status, a.body, tt.want)
			}
			if tt.want == 422 && !bytes.Contains(a.body, []byte(`"field":"Idempotency-Key"`)) {
				t.Errorf("problem %s does not name the header", a.body)
			}
		})
	}
	var products struct{ Data []json.RawMessage }
	req, _ := http.NewRequest("GET", h.URL+"/v3/products", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 300))
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&products)
	if resp.StatusCode != 200 || len(products.Data) != 1 {
		t.Errorf("GET with a key: %d, %d products; want 200 and 1", resp.StatusCode, len(products.Data))
	}
}
