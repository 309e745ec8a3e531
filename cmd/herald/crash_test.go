package main_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

func TestKilledServerLosesNoEvent(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	heraldtest.DumpLogsOnFailure(t, strings.TrimPrefix(env[0], "HERALD_DATABASE_URL="))
	env = append(env,
		"HERALD_ATTEMPT_TIMEOUT=10s",
		"HERALD_LEASE=5m", // far beyond the wait below: the restart must release them
		"HERALD_RETRY_INTERVAL=100ms",
	)
	// The receiver holds every request until released: the first process
	// dies with its attempts in flight.
	rcv := heraldtest.NewReceiver(t)
	release := make(chan struct{})
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	addr := freeAddr(t)
	p := startServe(t, env, addr)
	var hook struct{ ID, Token string }
	call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{"name": "crash", "url": rcv.URL, "events": []string{"license.created"}}, &hook)
	var product struct{ ID string }
	call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	const n = 20
	for range n {
		call(t, p.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
	}
	// The webhook's first four attempts (its starting share) are held; a
	// fifth goes out once one of them has timed out, after 10 s.
	heraldtest.Eventually(t, 30*time.Second, "attempts in flight", func() bool { return rcv.Count() >= 5 })
	p.stop(t, syscall.SIGKILL)

	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	close(release)
	p = startServe(t, env, addr)
	delivered := func() map[string]bool {
		ids := map[string]bool{}
		for _, r := range rcv.Requests() {
			if webhook.Verify(hook.Token, r.Body, r.Header.Get("webhook-signature")) != nil {
				t.Fatalf("a delivery failed verification")
			}
			pl, err := webhook.Parse(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			ids[pl.ID] = true
		}
		return ids
	}
	// Within a minute: long before the dead process's 5m leases end, because
	// on SQLite the restarted process knows they are orphaned and releases them.
	heraldtest.Eventually(t, time.Minute, "every event delivered after the restart", func() bool {
		var logs struct{ Data []struct{ Status string } }
		call(t, p.url, token, "GET", "/v3/webhook-event-logs?status=succeeded&limit=500", nil, &logs)
		return len(logs.Data) == n && len(delivered()) == n
	})
}

func TestSecondProcessOnOneSQLiteFileIsRefused(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	startServe(t, env, freeAddr(t))
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = append(os.Environ(), append(env, "HERALD_ADDR="+freeAddr(t))...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a second herald on the same SQLite file started; output:\n%s", out)
	}
	if !bytes.Contains(out, []byte("another herald process")) {
		t.Errorf("the refusal does not say why:\n%s", out)
	}
}
