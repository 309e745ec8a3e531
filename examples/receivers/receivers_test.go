// Package receivers_test runs each example receiver as its own process,
// points a webhook of a real herald at it, and checks that it verifies
// deliveries as the specification requires.
package receivers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	heraldclient "github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// token is the webhook's token, given to herald when the webhook is created
// and to the receiver through HERALD_WEBHOOK_TOKEN.
const token = "whsec_receivers_test"

// nonASCII goes into the data of the real event: accents, a dash, CJK and an
// emoji, raw multi-byte UTF-8 in the body. A receiver that decodes and
// re-encodes the body, or hashes re-serialised JSON, computes another
// signature.
const nonASCII = "Zoë – 日本語 – 🚀"

// answered is what the examples answer a verified delivery.
const answered = http.StatusNoContent

// receivers are the examples under test; command returns the command that
// runs one, or skips the test when its language is not installed.
var receivers = []struct {
	name    string
	command func(t *testing.T) *exec.Cmd
}{
	{"go", goReceiver},
	{"node", func(t *testing.T) *exec.Cmd { return script(t, "node", "Node.js", "node/server.js") }},
	{"python", func(t *testing.T) *exec.Cmd { return script(t, "python3", "Python 3", "python/receiver.py") }},
}

func TestReceivers(t *testing.T) {
	t.Parallel()
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, rc.command(t))
			h := heraldtest.Start(t, heraldtest.Options{})
			var hook heraldtest.Webhook
			h.Must(http.StatusCreated, "POST", "/v3/webhooks", map[string]any{
				"name": "example receiver (" + rc.name + ")", "url": r.url + "/webhooks/herald",
				"events": []string{"license.created"}, "token": token,
			}, &hook)
			// The lines the receiver must print, in order: one per
			// accepted delivery, none for a rejected one.
			printed := []string{r.ready}
			accept := func(eventID string) {
				t.Helper()
				printed = append(printed, "license.created "+eventID)
				r.waitForLines(t, len(printed))
			}

			accept(deliverEvent(t, h, hook.ID))

			sent := testDelivery(t, h, hook.ID)
			p, err := webhook.Parse([]byte(sent.Body))
			if err != nil {
				t.Fatalf("the Test result's body: %v", err)
			}
			accept(p.ID)

			// The Test's request, exactly as herald sent it, then altered.
			for _, tc := range []struct {
				name    string
				change  func(header http.Header, body []byte) []byte // nil: unaltered
				chunked bool                                         // one byte a chunk, no Content-Length
				ok      bool
			}{
				{name: "replayed unaltered", ok: true},
				{name: "body chunked", chunked: true, ok: true},
				{name: "body chunked, signature under another token", change: signWith("whsec_another_token"), chunked: true},
				{name: "body chunked, one character changed", change: tamper, chunked: true},
				{name: "header as Webhook-Signature", change: signatureHeaderAs("Webhook-Signature"), ok: true},
				{name: "header as WEBHOOK-SIGNATURE", change: signatureHeaderAs("WEBHOOK-SIGNATURE"), ok: true},
				{name: "one character of the body changed", change: tamper},
				{name: "same JSON with non-ASCII escaped", change: escapeNonASCII},
				{name: "signature under another token", change: signWith("whsec_another_token")},
				{name: "no signature", change: dropSignature},
			} {
				switch status := replay(t, sent, tc.change, tc.chunked); {
				case tc.ok && status != answered:
					t.Errorf("%s: status %d; want %d", tc.name, status, answered)
				case tc.ok:
					accept(p.ID)
				case status != http.StatusUnauthorized:
					t.Errorf("%s: status %d; want 401", tc.name, status)
				}
			}

			if got := r.lines(); !slices.Equal(got, printed) {
				t.Errorf("printed %q; want %q", got, printed)
			}
		})
	}
}

// deliverEvent fires a real license.created with non-ASCII data, waits until
// herald has delivered it to the webhook, checks that the receiver accepted
// it at the first attempt, and returns the event's id.
func deliverEvent(t *testing.T, h *heraldtest.Herald, hookID string) string {
	t.Helper()
	h.CreateLicense(map[string]any{"customer": nonASCII})
	var log heraldtest.Log
	heraldtest.Eventually(t, 20*time.Second, "the event to be delivered", func() bool {
		logs := h.Logs("webhookId=" + hookID)
		if len(logs) != 1 {
			return false
		}
		log = logs[0]
		return log.Status == "succeeded" || log.Status == "failed"
	})
	log = h.Log(log.ID)
	if log.Status != "succeeded" || len(log.Attempts) != 1 || log.StatusCode == nil || *log.StatusCode != answered {
		t.Fatalf("event log %s after %d attempts (status code %v, reason %v); want succeeded at the first, answered %d",
			log.Status, len(log.Attempts), deref(log.StatusCode), deref(log.RetryReason), answered)
	}
	if !strings.Contains(log.Payload, nonASCII) {
		t.Errorf("the payload sent lacks the raw UTF-8 of %q: %s", nonASCII, log.Payload)
	}
	return log.EventID
}

// sentRequest is a Test result's request: what herald sent, exactly.
type sentRequest struct {
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"` // by lowercase name
	Body      string            `json:"body"`
	Signature string            `json:"signature"`
}

// testDelivery runs the webhook's Test action with the verification check,
// checks that the receiver accepted the sample and rejected it under a wrong
// signature, and returns the request herald sent.
func testDelivery(t *testing.T, h *heraldtest.Herald, hookID string) sentRequest {
	t.Helper()
	var res struct {
		Request  sentRequest `json:"request"`
		Response *struct {
			StatusCode int    `json:"statusCode"`
			Body       string `json:"body"`
		} `json:"response"`
		Error             *string `json:"error"`
		Succeeded         bool    `json:"succeeded"`
		VerificationCheck *struct {
			StatusCode *int `json:"statusCode"`
			Rejected   bool `json:"rejected"`
		} `json:"verificationCheck"`
	}
	h.Must(http.StatusOK, "POST", "/v3/webhooks/"+hookID+"/test",
		map[string]any{"event": "license.created", "checkVerification": true}, &res)
	if !res.Succeeded || res.Response == nil || res.Response.StatusCode != answered {
		t.Fatalf("Test: succeeded %t, response %+v, error %v; want the receiver's %d",
			res.Succeeded, deref(res.Response), deref(res.Error), answered)
	}
	switch vc := res.VerificationCheck; {
	case vc == nil:
		t.Errorf("Test: verificationCheck null; want a report")
	case !vc.Rejected || vc.StatusCode == nil || *vc.StatusCode != http.StatusUnauthorized:
		t.Errorf("Test: verificationCheck rejected %t, status %v; want the wrongly signed sample rejected with 401",
			vc.Rejected, deref(vc.StatusCode))
	}
	if !strings.ContainsFunc(res.Request.Body, func(c rune) bool { return c > 0x7f }) || strings.Contains(res.Request.Body, `\u`) {
		t.Errorf("Test: the sample has no raw non-ASCII: %s", res.Request.Body)
	}
	if got := res.Request.Headers[webhook.SignatureHeader]; got == "" || got != res.Request.Signature {
		t.Fatalf("Test: headers sent %v; want %s: %s", res.Request.Headers, webhook.SignatureHeader, res.Request.Signature)
	}
	return res.Request
}

// replay sends sent to its URL again, after change (when not nil) has
// altered its headers and body, and returns the receiver's status. The
// headers are keyed by the lowercase names herald sends, and Go's client
// writes a header map's keys as they are. A chunked body goes one byte a
// chunk, so that its multi-byte characters are split across chunks.
func replay(t *testing.T, sent sentRequest, change func(header http.Header, body []byte) []byte, chunked bool) int {
	t.Helper()
	header := http.Header{}
	for name, value := range sent.Headers {
		switch name {
		case "content-length": // from the body, which change may alter
		case "user-agent":
			header.Set("User-Agent", value) // Go adds its own unless the key is canonical
		default:
			header[name] = []string{value}
		}
	}
	body := []byte(sent.Body)
	if change != nil {
		body = change(header, body)
	}
	var reader io.Reader = bytes.NewReader(body)
	if chunked {
		reader = iotest.OneByteReader(reader)
	}
	req, err := http.NewRequest(http.MethodPost, sent.URL, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	if chunked {
		req.ContentLength = -1 // unknown: Transfer-Encoding: chunked
		req.TransferEncoding = []string{"chunked"}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// tamper changes the body's first digit below 9 to the next one: one byte,
// as an attacker editing a captured delivery would (in the event id, it is
// a replay under a new id to get past de-duplication).
func tamper(_ http.Header, body []byte) []byte {
	for i, c := range body {
		if c >= '0' && c <= '8' {
			changed := bytes.Clone(body)
			changed[i]++
			return changed
		}
	}
	panic("no digit in the body to change")
}

// escapeNonASCII re-encodes every non-ASCII character as a \u escape: the
// same JSON document, other bytes.
func escapeNonASCII(_ http.Header, body []byte) []byte {
	var b strings.Builder
	for _, c := range string(body) {
		switch {
		case c < 0x80:
			b.WriteRune(c)
		case c > 0xffff:
			c -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return []byte(b.String())
}

func signWith(other string) func(http.Header, []byte) []byte {
	return func(header http.Header, body []byte) []byte {
		header[webhook.SignatureHeader] = []string{webhook.Sign(other, body)}
		return body
	}
}

func dropSignature(header http.Header, body []byte) []byte {
	delete(header, webhook.SignatureHeader)
	return body
}

// signatureHeaderAs sends the signature under the header name written as
// name.
func signatureHeaderAs(name string) func(http.Header, []byte) []byte {
	return func(header http.Header, body []byte) []byte {
		//lint:ignore SA1008 the header is sent under the name as written, not canonicalised: that is the test
		signature := header[webhook.SignatureHeader]
		delete(header, webhook.SignatureHeader)
		header[name] = signature
		return body
	}
}

// client adds no Accept-Encoding and follows no redirects.
var client = &http.Client{
	Transport: &http.Transport{DisableCompression: true},
	Timeout:   15 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func goReceiver(t *testing.T) *exec.Cmd {
	heraldtest.SkipShort(t, "builds and runs the example receiver as a program")
	bin := filepath.Join(t.TempDir(), "receiver")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./go").CombinedOutput(); err != nil {
		t.Fatalf("go build ./go: %v\n%s", err, out)
	}
	return exec.Command(bin)
}

func script(t *testing.T, program, language, file string) *exec.Cmd {
	heraldtest.SkipShort(t, "runs the example receiver as a program")
	path, err := exec.LookPath(program)
	heraldtest.SkipUnless(t, err == nil, fmt.Sprintf("%s is not installed (no %s on PATH), so the %s receiver is untested", language, program, language))
	return exec.Command(path, file)
}

// running is an example receiver started by start.
type running struct {
	url    string
	ready  string // the line it printed when ready
	stdout *heraldtest.Output
}

var readyLine = regexp.MustCompile(`(?m)^listening on (127\.0\.0\.1:\d+)$`)

// start runs cmd with the token and PORT=0 (a free port, which the receiver
// reports), and env after them (a later entry wins), waits until it is
// listening, and kills it when the test ends.
func start(t *testing.T, cmd *exec.Cmd, env ...string) *running {
	t.Helper()
	stdout, stderr := new(heraldtest.Output), new(heraldtest.Output)
	cmd.Env = append(append(os.Environ(), "HERALD_WEBHOOK_TOKEN="+token, "PORT=0"), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", cmd, stderr)
		}
	})

	deadline := time.After(30 * time.Second)
	for {
		if m := readyLine.FindStringSubmatch(stdout.String()); m != nil {
			return &running{url: "http://" + m[1], ready: m[0], stdout: stdout}
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", cmd, cmd.ProcessState, stdout, stderr)
		case <-deadline:
			t.Fatalf("%s printed no %q line within 30s\nstdout:\n%s\nstderr:\n%s", cmd, readyLine, stdout, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *running) lines() []string {
	return strings.Split(strings.TrimSuffix(r.stdout.String(), "\n"), "\n")
}

// waitForLines waits until the receiver has printed at least n lines.
func (r *running) waitForLines(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(r.lines()) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("printed %q; want at least %d lines", r.lines(), n)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestReceiversThroughATokenRotation follows docs/receiving.md, "Rotating
// the token", with each receiver: it keeps its token when the rotation
// starts, is restarted with HERALD_WEBHOOK_NEXT_TOKEN as well, passes a Test
// signed with the next token, keeps accepting after the rotation is
// finished, and is restarted with the next token alone. Every real delivery
// along the way is accepted at its first attempt; at the end a request
// signed with the old token is refused.
func TestReceiversThroughATokenRotation(t *testing.T) {
	t.Parallel()
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			h := heraldtest.Start(t, heraldtest.Options{})
			ctx := context.Background()
			r := start(t, rc.command(t))
			hook, err := h.API.CreateWebhook(ctx, heraldclient.WebhookCreate{Name: "rotating (" + rc.name + ")",
				URL: r.url + "/webhooks/herald", Events: []string{"license.created"}, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			// point moves the webhook to a restarted receiver's port.
			point := func(r *running) {
				t.Helper()
				u := r.url + "/webhooks/herald"
				if _, err := h.API.UpdateWebhook(ctx, hook.ID, heraldclient.WebhookUpdate{URL: &u}); err != nil {
					t.Fatal(err)
				}
			}
			delivered := func(r *running, want int) {
				t.Helper()
				h.CreateLicense(map[string]any{"customer": nonASCII})
				heraldtest.Eventually(t, 20*time.Second, "the event to be delivered", func() bool {
					logs := h.Logs("webhookId=" + hook.ID)
					return len(logs) == want && (logs[0].Status == "succeeded" || logs[0].Status == "failed")
				})
				if l := h.Logs("webhookId=" + hook.ID)[0]; l.Status != "succeeded" || l.AttemptCount != 1 {
					t.Fatalf("delivery %d: %s after %d attempts (%v); want succeeded at the first", want, l.Status, l.AttemptCount, deref(l.RetryReason))
				}
				r.waitForLines(t, 2) // the ready line and the delivery
			}

			// 1. Rotate: the receiver, unchanged, still verifies.
			if _, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour); err != nil {
				t.Fatalf("rotate: %v", err)
			}
			delivered(r, 1)
			_, next, err := h.API.WebhookTokens(ctx, hook.ID)
			if err != nil || next == "" {
				t.Fatalf("the next token: %q, %v", next, err)
			}

			// 2. Restart it with both tokens; a Test signed with the next
			// token shows it accepts that one.
			both := start(t, rc.command(t), "HERALD_WEBHOOK_NEXT_TOKEN="+next)
			point(both)
			for _, signWith := range []string{"current", "next"} {
				res, err := h.API.TestWebhook(ctx, hook.ID, heraldclient.TestRequest{SignWith: signWith, CheckVerification: true})
				if err != nil || !res.Succeeded || res.SignedWith != signWith || res.VerificationCheck == nil || !res.VerificationCheck.Rejected {
					t.Fatalf("Test signed with %s: %+v, %v; want accepted, and the forgery rejected", signWith, res, err)
				}
			}
			delivered(both, 2)

			// 3. Finish: the next token signs alone, and is accepted.
			if _, err := h.API.FinishWebhookTokenRotation(ctx, hook.ID); err != nil {
				t.Fatalf("finish: %v", err)
			}
			delivered(both, 3)

			// 4. Restart it with the next token alone.
			only := start(t, rc.command(t), "HERALD_WEBHOOK_TOKEN="+next)
			point(only)
			delivered(only, 4)
			res, err := h.API.TestWebhook(ctx, hook.ID, heraldclient.TestRequest{})
			if err != nil || !res.Succeeded || res.SignedWith != "current" {
				t.Fatalf("Test after the rotation: %+v, %v; want accepted", res, err)
			}
			sent := sentRequest{URL: res.Request.URL, Headers: res.Request.Headers, Body: res.Request.Body, Signature: res.Request.Signature}
			if status := replay(t, sent, signWith(token), false); status != http.StatusUnauthorized {
				t.Errorf("signed with the old token after the rotation: %d; want 401", status)
			}
		})
	}
}
