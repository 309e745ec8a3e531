package listen_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/receivertest"

	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/webhook"
)

const (
	token   = "whsec_listen_test"
	eventID = "0f8fad5b-d9cb-469f-a165-70867728950e"
)

var body = []byte(`{"id":"` + eventID + `","event":"license.created","data":{"key":"HRLD-7Q4M-2KX9","name":"Zoë – 日本語 – 🚀"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)

// pretty is body as listen prints it: indented, UTF-8 kept as sent.
const pretty = `{
  "id": "` + eventID + `",
  "event": "license.created",
  "data": {
    "key": "HRLD-7Q4M-2KX9",
    "name": "Zoë – 日本語 – 🚀"
  },
  "triggeredAt": "2026-11-21T08:07:13.120Z"
}
`

// client sends without adding Accept-Encoding, so that the headers a
// forward must keep are exactly the ones a test sets, and shows redirects
// rather than following them.
var client = &http.Client{
	Transport: &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// start serves listen.Handler(cfg) over loopback HTTP and returns its URL
// and what it prints.
func start(t *testing.T, cfg listen.Config) (string, *receivertest.Output) {
	t.Helper()
	out := new(receivertest.Output)
	cfg.Token, cfg.Out = token, out
	srv := httptest.NewServer(listen.Handler(cfg))
	t.Cleanup(srv.Close)
	return srv.URL, out
}

// heraldHeaders are the headers of a delivery of body signed with signature.
func heraldHeaders(signature string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", "herald/test")
	h.Set(webhook.IDHeader, eventID)
	if signature != "" {
		h.Set(webhook.SignatureHeader, signature)
	}
	return h
}

// send posts body with header to url and returns the answer and its body.
func send(t *testing.T, url string, header http.Header, body []byte) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(answer)
}

func TestVerifiedDeliveryIsPrintedAndAnswered200(t *testing.T) {
	t.Parallel()
	url, out := start(t, listen.Config{})

	resp, answer := send(t, url, heraldHeaders(webhook.Sign(token, body)), body)

	if resp.StatusCode != http.StatusOK || strings.TrimSpace(answer) != `{"received":true}` {
		t.Errorf("answer = %d %s; want 200 {\"received\":true}", resp.StatusCode, answer)
	}
	header := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  license\.created  ` + eventID + `  verified\n`)
	if got := out.String(); !header.MatchString(got) || !strings.Contains(got, "verified\n"+pretty) {
		t.Errorf("printed:\n%s\nwant a header line matching %s then:\n%s", got, header, pretty)
	}
}

func TestUnverifiedDeliveryIsAnswered401(t *testing.T) {
	t.Parallel()
	tampered := bytes.Replace(body, []byte("HRLD-7Q4M"), []byte("HRLD-7Q4N"), 1)
	for _, tc := range []struct {
		name, signature string
		body            []byte
		problem         string
	}{
		{"tampered body", webhook.Sign(token, body), tampered, "signature does not match the body under this token"},
		{"wrong token", webhook.Sign("whsec_another", body), body, "signature does not match the body under this token"},
		{"not base64", "not a signature!", body, "webhook-signature is not base64"},
		{"no signature", "", body, "no webhook-signature header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, out := start(t, listen.Config{})

			resp, answer := send(t, url, heraldHeaders(tc.signature), tc.body)

			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(answer, tc.problem) {
				t.Errorf("answer = %d %s; want 401 naming %q", resp.StatusCode, answer, tc.problem)
			}
			if want := "  NOT VERIFIED (" + tc.problem + ")\n"; !strings.Contains(out.String(), want) {
				t.Errorf("printed:\n%s\nwant it to contain %q", out, want)
			}
		})
	}
}

// app is the integrator's app that listen forwards to: it records what it
// received and answers 201 with a body and a header of its own.
type app struct {
	mu       sync.Mutex
	requests []received
}

type received struct {
	method string
	header http.Header
	body   []byte
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, received{r.Method, r.Header, body})
	a.mu.Unlock()
	w.Header().Set("X-App", "yes")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, "stored by the app")
}

func (a *app) received() []received {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

func startApp(t *testing.T) (*app, string) {
	a := new(app)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv.URL + "/webhooks/herald"
}

func TestForwardPassesTheDeliveryUnchangedAndRelaysTheAnswer(t *testing.T) {
	t.Parallel()
	a, appURL := startApp(t)
	url, out := start(t, listen.Config{Forward: appURL})

	header := heraldHeaders(webhook.Sign(token, body))
	header.Set("X-Custom", "kept")
	header.Set("Connection", "X-Hop")
	header.Set("X-Hop", "dropped")
	resp, answer := send(t, url, header, body)

	if resp.StatusCode != http.StatusCreated || answer != "stored by the app" || resp.Header.Get("X-App") != "yes" {
		t.Errorf("answer = %d %q X-App %q; want the app's 201 %q X-App %q",
			resp.StatusCode, answer, resp.Header.Get("X-App"), "stored by the app", "yes")
	}
	got := a.received()
	if len(got) != 1 {
		t.Fatalf("app received %d requests; want 1", len(got))
	}
	if got[0].method != http.MethodPost || !bytes.Equal(got[0].body, body) {
		t.Errorf("app received %s %q; want POST with the same bytes %q", got[0].method, got[0].body, body)
	}
	want := heraldHeaders(webhook.Sign(token, body))
	want.Set("X-Custom", "kept")
	want.Set("Content-Length", strconv.Itoa(len(body)))
	for name := range want {
		if got[0].header.Get(name) != want.Get(name) {
			t.Errorf("app received %s: %q; want %q", name, got[0].header.Get(name), want.Get(name))
		}
	}
	for name := range got[0].header {
		if _, ok := want[name]; !ok {
			t.Errorf("app received %s: %q; want no such header", name, got[0].header.Get(name))
		}
	}
	if want := "forwarded to " + appURL + ": 201 Created\n"; !strings.Contains(out.String(), want) {
		t.Errorf("printed:\n%s\nwant it to contain %q", out, want)
	}
}

func TestUnverifiedDeliveryIsNotForwarded(t *testing.T) {
	t.Parallel()
	a, appURL := startApp(t)
	url, out := start(t, listen.Config{Forward: appURL})

	resp, _ := send(t, url, heraldHeaders(webhook.Sign("whsec_another", body)), body)

	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status = %d; want 401", resp.StatusCode)
	}
	if n := len(a.received()); n != 0 {
		t.Errorf("app received %d requests; want none", n)
	}
	if !strings.Contains(out.String(), "NOT VERIFIED") || !strings.Contains(out.String(), "not forwarded\n") {
		t.Errorf("printed:\n%s\nwant NOT VERIFIED and not forwarded", out)
	}
}

func TestForwardFailureIsAnswered502(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	url, out := start(t, listen.Config{Forward: gone.URL})

	resp, answer := send(t, url, heraldHeaders(webhook.Sign(token, body)), body)

	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(answer, "connection refused") {
		t.Errorf("answer = %d %s; want 502 saying why", resp.StatusCode, answer)
	}
	if want := "forward to " + gone.URL + " failed: "; !strings.Contains(out.String(), want) {
		t.Errorf("printed:\n%s\nwant it to contain %q", out, want)
	}
}

func TestForwardRelaysRedirectsWithoutFollowing(t *testing.T) {
	t.Parallel()
	moved := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusFound))
	t.Cleanup(moved.Close)
	url, _ := start(t, listen.Config{Forward: moved.URL})

	resp, _ := send(t, url, heraldHeaders(webhook.Sign(token, body)), body)

	// Herald never follows redirects and counts them as failures; listen
	// shows the app's redirect as herald will see it.
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" {
		t.Errorf("answer = %d Location %q; want 302 /elsewhere", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestOversizedBodyIsAnswered413(t *testing.T) {
	t.Parallel()
	url, out := start(t, listen.Config{})
	big := bytes.Repeat([]byte("x"), webhook.MaxBodyBytes+1)

	resp, _ := send(t, url, heraldHeaders(webhook.Sign(token, big)), big)

	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d; want 413", resp.StatusCode)
	}
	if !strings.Contains(out.String(), "NOT VERIFIED (body larger than 1 MiB)") {
		t.Errorf("printed:\n%s\nwant NOT VERIFIED (body larger than 1 MiB)", out)
	}
}

func TestRunListensUntilTheContextIsDone(t *testing.T) {
	t.Parallel()
	out := new(receivertest.Output)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- listen.Run(ctx, listen.Config{Token: token, Addr: "127.0.0.1:0", Out: out}) }()

	first := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+)\n`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("printed %q; want a first line matching %s", out, first)
		}
		m = first.FindStringSubmatch(out.String())
	}
	resp, _ := send(t, m[1], heraldHeaders(webhook.Sign(token, body)), body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status = %d; want 200", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v; want nil after the context is done", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the context was done")
	}
}

func TestRunRefusesABadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]listen.Config{
		"no token":         {Addr: "127.0.0.1:0"},
		"relative forward": {Token: token, Addr: "127.0.0.1:0", Forward: "/webhooks"},
		"ftp forward":      {Token: token, Addr: "127.0.0.1:0", Forward: "ftp://127.0.0.1/"},
	} {
		if err := listen.Run(t.Context(), cfg); err == nil {
			t.Errorf("Run with %s = nil; want an error", name)
		}
	}
}
