package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// herald listen --pull, as a licensee behind a firewall runs it: it reads
// a pull webhook's events from a running herald with a pull token (made by
// herald webhooks pull-token), forwards each to the app with the headers a
// POST carries (the Standard Webhooks library verifies them), acknowledges
// what the app took, and forwards again, in order, what it refused.
func TestListenPullForwardsAndAcknowledges(t *testing.T) {
	t.Parallel()
	env, apiToken := serveEnv(t)
	serve := startServe(t, env, freeAddr(t))
	api := func(method, path string, body, out any) {
		t.Helper()
		call(t, serve.url, apiToken, method, path, body, out)
	}
	var hook struct{ ID, Token string }
	api("POST", "/v3/webhooks", map[string]any{"name": "behind a firewall", "type": "pull", "events": []string{"license.created"},
		"signatureScheme": "standard-webhooks"}, &hook)
	code, out := runToEnd(t, []string{"HERALD_SERVER=" + serve.url, "HERALD_API_TOKEN=" + apiToken}, "webhooks", "pull-token", hook.ID)
	m := regexp.MustCompile(`pull token: (hrldpull_\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("herald webhooks pull-token: exit %d, printed %q; want the token", code, out)
	}

	// The app refuses its first request, then takes every one.
	var mu sync.Mutex
	var got []heraldtest.Request
	var answered []int
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("app: read body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		status := http.StatusNoContent
		if len(got) == 0 {
			status = http.StatusServiceUnavailable
		}
		got = append(got, heraldtest.Request{Header: r.Header.Clone(), Body: body})
		answered = append(answered, status)
		w.WriteHeader(status)
	}))
	t.Cleanup(app.Close)

	var licenses []string
	for range 2 {
		var product, license struct{ ID string }
		api("POST", "/v3/products", map[string]any{"name": "Pro"}, &product)
		api("POST", "/v3/licenses", map[string]any{"productId": product.ID}, &license)
		licenses = append(licenses, license.ID)
	}
	listen := command(t, []string{"HERALD_SERVER=" + serve.url, "HERALD_PULL_TOKEN=" + m[1]}, "listen", "--pull", hook.ID, "--forward", app.URL)

	heraldtest.Eventually(t, 30*time.Second, "both events acknowledged", func() bool {
		var logs struct{ Data []struct{ Status string } }
		api("GET", "/v3/webhook-event-logs?webhookId="+hook.ID+"&status=succeeded", nil, &logs)
		return len(logs.Data) == 2
	})
	if state := listen.stop(t, os.Interrupt); !state.Success() {
		t.Errorf("herald listen --pull after an interrupt: %v; want exit status 0\n%s", state, listen.out)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || answered[0] != http.StatusServiceUnavailable {
		t.Fatalf("app received %d requests, answered %v; want 3: the first refused, then both", len(got), answered)
	}
	verifier, err := standardwebhooks.NewWebhook(hook.Token)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for i, r := range got {
		if err := verifier.Verify(r.Body, r.Header); err != nil {
			t.Errorf("request %d: the Standard Webhooks library refuses it: %v", i, err)
		}
		var body struct {
			Data struct{ ID string } `json:"data"`
		}
		json.Unmarshal(r.Body, &body)
		order = append(order, body.Data.ID)
		if r.Header.Get(webhook.IDHeader) == "" || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("request %d headers %v; want those of a POST", i, r.Header)
		}
	}
	want := []string{licenses[0], licenses[0], licenses[1]}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("app received licenses %v; want %v: the refused one again, then the next", order, want)
	}
	if !strings.Contains(listen.out.String(), "not acknowledged") || !strings.Contains(listen.out.String(), "204 No Content") {
		t.Errorf("herald listen --pull printed\n%s\nwant the refusal and the forwards", listen.out)
	}
}
