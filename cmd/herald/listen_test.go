package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

const (
	// hookToken is the webhook's token: given to herald serve when the
	// webhook is created, and to herald listen.
	hookToken = "whsec_listen_serve_test"
	nonASCII  = "Zoë – 日本語 – 🚀"
	// What the app answers, so that a relayed answer is told from listen's own.
	appStatus = http.StatusAccepted
	appBody   = "queued by the app"
)

// app is the integrator's app that herald listen forwards to: it records
// each request as it arrived and answers appStatus with appBody.
type app struct {
	url string
	mu  sync.Mutex
	got []heraldtest.Request
}

func startApp(t *testing.T) *app {
	a := new(app)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.got = append(a.got, heraldtest.Request{Header: r.Header.Clone(), Body: body, At: time.Now()})
		a.mu.Unlock()
		w.Header().Set("X-App", "yes")
		w.WriteHeader(appStatus)
		io.WriteString(w, appBody)
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL + "/webhooks/herald"
	return a
}

func (a *app) requests() []heraldtest.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]heraldtest.Request(nil), a.got...)
}

// eventLog is the part of an event log this test reads.
type eventLog struct {
	ID         string `json:"id"`
	EventID    string `json:"eventId"`
	Status     string `json:"status"`
	Payload    string `json:"payload"`
	StatusCode *int   `json:"statusCode"`
	Attempts   []struct {
		StatusCode   *int   `json:"statusCode"`
		ResponseBody string `json:"responseBody"`
	} `json:"attempts"`
}

func TestListenVerifiesAndForwardsDeliveriesFromServe(t *testing.T) {
	t.Parallel()
	env, apiToken := serveEnv(t)
	serve := startServe(t, env, freeAddr(t))
	api := func(method, path string, body, out any) {
		t.Helper()
		call(t, serve.url, apiToken, method, path, body, out)
	}
	app := startApp(t)
	listen := startListen(t, nil, "--token", hookToken, "--port", "0", "--forward", app.url)
	heraldtest.Eventually(t, 10*time.Second, "herald listen to name the app", func() bool {
		return strings.Contains(listen.out.String(), "forwarding verified deliveries to "+app.url+"\n")
	})

	var hook struct{ ID string }
	api("POST", "/v3/webhooks", map[string]any{
		"name": "herald listen", "url": listen.url + "/", "events": []string{"license.created"}, "token": hookToken,
	}, &hook)
	var product, license struct{ ID string }
	api("POST", "/v3/products", map[string]any{"name": "Pro"}, &product)
	api("POST", "/v3/licenses", map[string]any{"productId": product.ID, "metadata": map[string]any{"customer": nonASCII}}, &license)

	// The real delivery: verified, printed, forwarded byte for byte, and
	// the app's answer relayed to herald.
	var log eventLog
	heraldtest.Eventually(t, 20*time.Second, "the event to be delivered", func() bool {
		var logs struct{ Data []eventLog }
		api("GET", "/v3/webhook-event-logs?webhookId="+hook.ID, nil, &logs)
		if len(logs.Data) != 1 {
			return false
		}
		log = logs.Data[0]
		return log.Status == "succeeded" || log.Status == "failed"
	})
	api("GET", "/v3/webhook-event-logs/"+log.ID, nil, &log)
	if log.Status != "succeeded" || log.StatusCode == nil || *log.StatusCode != appStatus ||
		len(log.Attempts) != 1 || log.Attempts[0].ResponseBody != appBody {
		var answer string
		if n := len(log.Attempts); n > 0 {
			answer = log.Attempts[n-1].ResponseBody
		}
		t.Fatalf("event log %s after %d attempts, answered %s %q; want succeeded at the first attempt with the app's %d %q",
			log.Status, len(log.Attempts), show(log.StatusCode), answer, appStatus, appBody)
	}
	payload := []byte(log.Payload)
	if !bytes.Contains(payload, []byte(nonASCII)) {
		t.Errorf("payload lacks the raw UTF-8 of %q: %s", nonASCII, payload)
	}
	got := app.requests()
	if len(got) != 1 {
		t.Fatalf("app received %d requests; want 1", len(got))
	}
	if !bytes.Equal(got[0].Body, payload) {
		t.Errorf("app received\n%s\nwant the bytes herald sent\n%s", got[0].Body, payload)
	}
	for name, want := range map[string]string{
		"Content-Type":          "application/json; charset=utf-8",
		"Content-Length":        strconv.Itoa(len(payload)),
		webhook.SignatureHeader: webhook.Sign(hookToken, payload), // HMAC is deterministic: what herald sent
		webhook.IDHeader:        log.EventID,
	} {
		if got := got[0].Header.Get(name); got != want {
			t.Errorf("app received %s: %q; want %q", name, got, want)
		}
	}
	if ua := got[0].Header.Get("User-Agent"); !strings.HasPrefix(ua, "herald/") {
		t.Errorf("app received User-Agent %q; want herald's", ua)
	}
	printed(t, listen, log.EventID, "verified", payload, "forwarded to "+app.url+": 202 Accepted")

	// The Test action with the verification check, through listen: the
	// signed sample reaches the app with exactly the headers herald reports
	// sending; the forged one is answered 401 by listen and goes no further.
	var res struct {
		Request struct {
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		} `json:"request"`
		Response *struct {
			StatusCode int               `json:"statusCode"`
			Headers    map[string]string `json:"headers"`
			Body       string            `json:"body"`
		} `json:"response"`
		Succeeded         bool `json:"succeeded"`
		VerificationCheck *struct {
			StatusCode *int `json:"statusCode"`
			Rejected   bool `json:"rejected"`
		} `json:"verificationCheck"`
	}
	api("POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{"checkVerification": true}, &res)
	if !res.Succeeded || res.Response == nil || res.Response.StatusCode != appStatus ||
		res.Response.Body != appBody || res.Response.Headers["x-app"] != "yes" {
		t.Errorf("Test: succeeded %t, response %s; want the app's answer relayed", res.Succeeded, show(res.Response))
	}
	switch vc := res.VerificationCheck; {
	case vc == nil:
		t.Errorf("Test: verificationCheck null; want a report")
	case !vc.Rejected || vc.StatusCode == nil || *vc.StatusCode != http.StatusUnauthorized:
		t.Errorf("Test: verificationCheck rejected %t, status %s; want the forgery rejected with 401", vc.Rejected, show(vc.StatusCode))
	}
	got = app.requests()
	if len(got) != 2 {
		t.Fatalf("app received %d requests after the Test; want 2, the forgery not forwarded", len(got))
	}
	if string(got[1].Body) != res.Request.Body {
		t.Errorf("app received\n%s\nwant the Test's body\n%s", got[1].Body, res.Request.Body)
	}
	for name, want := range res.Request.Headers {
		if got := got[1].Header.Get(name); got != want {
			t.Errorf("app received %s: %q; want %q as herald sent it", name, got, want)
		}
	}
	for name := range got[1].Header {
		// Go's transport asks for gzip on herald's requests; listen
		// passes that on too.
		if _, sent := res.Request.Headers[strings.ToLower(name)]; !sent && name != "Accept-Encoding" {
			t.Errorf("app received %s: %q; herald sent no such header", name, got[1].Header.Get(name))
		}
	}
	var sample webhook.Payload
	if err := json.Unmarshal([]byte(res.Request.Body), &sample); err != nil {
		t.Fatal(err)
	}
	printed(t, listen, sample.ID, "verified", []byte(res.Request.Body), "forwarded to "+app.url+": 202 Accepted")
	printed(t, listen, sample.ID, "NOT VERIFIED (signature does not match the body under this token)", []byte(res.Request.Body), "not forwarded")

	// Forgeries straight to listen: 401, never forwarded.
	for _, forged := range []struct {
		name, signature string
		body            []byte
	}{
		{"wrong signature", webhook.Sign("whsec_not_the_token", payload), payload},
		{"tampered body", webhook.Sign(hookToken, payload), bytes.Replace(payload, []byte(nonASCII), []byte("Zoe - Nihongo"), 1)},
	} {
		req, err := http.NewRequest(http.MethodPost, listen.url+"/", bytes.NewReader(forged.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set(webhook.SignatureHeader, forged.signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d; want 401", forged.name, resp.StatusCode)
		}
	}
	if n := len(app.requests()); n != 2 {
		t.Errorf("app received %d requests; want still 2, no forgery forwarded", n)
	}
	heraldtest.Eventually(t, 10*time.Second, "herald listen to print three forgeries not forwarded", func() bool {
		return strings.Count(listen.out.String(), "\nnot forwarded\n") == 3
	})

	// Ctrl-C stops it cleanly.
	if state := listen.stop(t, os.Interrupt); !state.Success() {
		t.Errorf("herald listen after an interrupt: %v; want exit status 0", state)
	}
}

// printed checks that listen printed a delivery of event id with verdict:
// its header line, the body pretty-printed with its UTF-8 as sent, then
// note. It waits a little: the output reaches the test through a pipe.
func printed(t *testing.T, listen *proc, id, verdict string, body []byte, note string) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}  license\.created  ` + regexp.QuoteMeta(id+"  "+verdict+"\n"+pretty.String()+"\n"+note+"\n\n"))
	for deadline := time.Now().Add(10 * time.Second); !block.MatchString(listen.out.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("herald listen printed:\n%s\nwant a delivery printed as\nHH:MM:SS.mmm  license.created  %s  %s\n%s\n%s",
				listen.out, id, verdict, pretty.String(), note)
			return
		}
	}
}

func TestListenTakesTheTokenFromTheEnvironment(t *testing.T) {
	t.Parallel()
	listen := startListen(t, []string{"HERALD_WEBHOOK_TOKEN=" + hookToken}, "--port", "0")
	body := []byte(`{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","event":"license.created","data":{"name":"` + nonASCII + `"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
	for signature, want := range map[string]int{
		webhook.Sign(hookToken, body):             http.StatusOK,
		webhook.Sign("whsec_not_the_token", body): http.StatusUnauthorized,
	} {
		req, err := http.NewRequest(http.MethodPost, listen.url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(webhook.SignatureHeader, signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("status %d; want %d", resp.StatusCode, want)
		}
	}
}

func TestListenRefusesToStartWithoutAToken(t *testing.T) {
	t.Parallel()
	p := command(t, []string{"HERALD_WEBHOOK_TOKEN="}, "listen", "--port", "0")
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("herald listen without a token is still running")
	}
	if p.cmd.ProcessState.Success() || !strings.Contains(p.out.String(), "--token or $HERALD_WEBHOOK_TOKEN is required") {
		t.Errorf("herald listen without a token: %v, printed %q; want a failure naming --token and $HERALD_WEBHOOK_TOKEN", p.cmd.ProcessState, p.out)
	}
}

// show formats what p points to, or null.
func show[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%+v", *p)
}
