package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// With --log-format json every line herald logs is one JSON object: the
// start, an access line per API and portal request that matches the answer's
// X-Request-Id, each attempt at debug, and the stop. No line holds the API
// token or a webhook's signing token.
func TestJSONLogsNameEachRequestEachAttemptAndTheStop(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	env = append(env, "HERALD_LOG_FORMAT=json", "HERALD_LOG_LEVEL=debug")
	a := startApp(t)
	p := startServe(t, env, freeAddr(t))

	var hook struct{ ID, Token string }
	call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{
		"name": "logs", "url": a.url, "events": []string{"license.created"}}, &hook)
	var product struct{ ID string }
	call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "Logs"}, &product)

	do := func(method, path, body string) (status int, requestID string) {
		t.Helper()
		req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("X-Request-Id")
		if id == "" {
			t.Fatalf("%s %s: no X-Request-Id in the answer", method, path)
		}
		return resp.StatusCode, id
	}
	created, createdID := do("POST", "/v3/licenses", `{"productId":"`+product.ID+`"}`)
	missing, missingID := do("GET", "/v3/no-such-thing", "")
	signin, signinID := do("GET", "/signin", "")
	if created != 201 || missing != 404 || signin != 200 {
		t.Fatalf("statuses %d, %d, %d; want 201, 404, 200", created, missing, signin)
	}
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return len(a.requests()) == 1 })
	if st := p.stop(t, syscall.SIGTERM); !st.Success() {
		t.Fatalf("exit %v after SIGTERM", st)
	}

	out := p.out.String()
	for _, secret := range []string{token, hook.Token} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a secret %q…", secret[:8])
		}
	}
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "herald: ") { // first-start credentials, on stdout
			continue
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader([]byte(line)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("a log line is not JSON (%v): %q", err, line)
		}
		lines = append(lines, m)
	}
	find := func(what string, match map[string]string) map[string]any {
		t.Helper()
	next:
		for _, m := range lines {
			for k, v := range match {
				if got, _ := m[k].(string); got != v {
					continue next
				}
			}
			return m
		}
		t.Errorf("no %s line with %v in:\n%s", what, match, out)
		return nil
	}
	find("start", map[string]string{"level": "INFO", "msg": "herald serving"})
	for _, want := range []struct {
		id, method, route string
		status            int
	}{
		{createdID, "POST", "POST /v3/licenses", 201},
		{missingID, "GET", "/v3/", 404},
		{signinID, "GET", "GET /signin", 200},
	} {
		m := find("access", map[string]string{"msg": "request", "request_id": want.id})
		if m == nil {
			continue
		}
		if m["method"] != want.method || m["route"] != want.route || m["status"] != json.Number(strconv.Itoa(want.status)) || m["duration_ms"] == nil {
			t.Errorf("access line %v; want method %s, route %q, status %d and a duration", m, want.method, want.route, want.status)
		}
	}
	if m := find("attempt", map[string]string{"level": "DEBUG", "msg": "attempt", "webhook": hook.ID}); m != nil {
		if m["result"] != "delivered" || m["status"] != json.Number(strconv.Itoa(appStatus)) {
			t.Errorf("attempt line %v; want result delivered, status %d", m, appStatus)
		}
	}
	find("stopping", map[string]string{"level": "INFO", "msg": "herald stopping: no new requests; attempts in flight finish and are recorded"})
	find("stopped", map[string]string{"level": "INFO", "msg": "herald stopped"})
	// Health checks are left out of the access log.
	for _, m := range lines {
		if m["msg"] == "request" && m["route"] == "GET /readyz" {
			t.Errorf("a readiness probe was logged: %v", m)
		}
	}
}
