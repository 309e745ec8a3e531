// Package receivers_test runs each example receiver as its own process and
// checks that it verifies deliveries as the specification requires.
package receivers_test

import (
	"bytes"
	"fmt"
	"github.com/heraldhq/herald/internal/heraldtest"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/webhook"
)

const token = "whsec_receivers_test"

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
			var accepted []string

			for i, tc := range []struct {
				name   string
				change func(header http.Header, body []byte) []byte // nil: deliver directly
				ok     bool
			}{
				{name: "signed delivery with non-ASCII data", ok: true},
				{name: "one byte changed", change: changeOneByte},
				{name: "wrong signature", change: signWith("whsec_another_token")},
				{name: "no signature", change: dropSignature},
				{name: "header as Webhook-Signature", change: signatureHeaderAs("Webhook-Signature"), ok: true},
				{name: "header as WEBHOOK-SIGNATURE", change: signatureHeaderAs("WEBHOOK-SIGNATURE"), ok: true},
			} {
				id := fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", i)
				body := delivery(id)
				url := r.url
				if tc.change != nil {
					url = via(t, r.url, tc.change)
				}

				resp := deliver(t, url, token, body)

				switch answered := resp.StatusCode; {
				case tc.ok && answered/100 != 2:
					t.Errorf("%s: status %d; want 2xx", tc.name, answered)
				case tc.ok:
					accepted = append(accepted, "license.created "+id)
					r.waitForLine(t, accepted[len(accepted)-1])
				case answered != http.StatusUnauthorized:
					t.Errorf("%s: status %d; want 401", tc.name, answered)
				}
			}

			// One line per accepted delivery, none for the rejected ones.
			if got, want := r.lines(), append([]string{r.ready}, accepted...); !slices.Equal(got, want) {
				t.Errorf("printed %q; want %q", got, want)
			}
		})
	}
}

// deliver sends body to url as herald delivers it, signed under token, and
// returns the answer with its body already read. It is the only place that
// signs: the cases that must be rejected alter a correct delivery on its way
// (see via), so that herald itself can be swapped in here.
func deliver(t *testing.T, url, token string, body []byte) *http.Response {
	t.Helper()
	p, err := webhook.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// The names as the specification writes them; Go would canonicalise
	// them through Header.Set.
	req.Header["content-type"] = []string{"application/json; charset=utf-8"}
	req.Header["user-agent"] = []string{"herald/test"}
	req.Header[webhook.IDHeader] = []string{p.ID}
	req.Header[webhook.SignatureHeader] = []string{webhook.Sign(token, body)}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	return resp
}

// delivery is a payload with raw multi-byte UTF-8 in its data, as herald
// sends it: a receiver that decodes and re-encodes, or hashes re-serialised
// JSON, computes another signature.
func delivery(id string) []byte {
	return []byte(`{"id":"` + id + `","event":"license.created","data":{"key":"HRLD-7Q4M-2KX9","user":{"name":"Zoë – 日本語 – 🚀"}},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
}

func changeOneByte(_ http.Header, body []byte) []byte {
	return bytes.Replace(body, []byte("HRLD-7Q4M"), []byte("HRLD-7Q4N"), 1)
}

func signWith(other string) func(http.Header, []byte) []byte {
	return func(header http.Header, body []byte) []byte {
		header.Set(webhook.SignatureHeader, webhook.Sign(other, body))
		return body
	}
}

func dropSignature(header http.Header, body []byte) []byte {
	header.Del(webhook.SignatureHeader)
	return body
}

// signatureHeaderAs sends the signature under the header name written as
// name; Go's client writes a header map's keys as they are.
func signatureHeaderAs(name string) func(http.Header, []byte) []byte {
	return func(header http.Header, body []byte) []byte {
		signature := header.Get(webhook.SignatureHeader)
		header.Del(webhook.SignatureHeader)
		header[name] = []string{signature}
		return body
	}
}

// via returns the URL of a relay that passes each request on to target after
// change has altered its headers and body, and answers with target's status
// and body: a delivery tampered with in transit.
func via(t *testing.T, target string, change func(header http.Header, body []byte) []byte) string {
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		header := r.Header.Clone()
		body = change(header, body)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = header
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(relay.Close)
	return relay.URL
}

// client adds no Accept-Encoding and follows no redirects, as herald.
var client = &http.Client{
	Transport: &http.Transport{DisableCompression: true},
	Timeout:   15 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func goReceiver(t *testing.T) *exec.Cmd {
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
	path, err := exec.LookPath(program)
	heraldtest.SkipUnless(t, err == nil, fmt.Sprintf("%s is not installed (no %s on PATH), so the %s receiver is untested", language, program, language))
	return exec.Command(path, file)
}

// running is an example receiver started by start.
type running struct {
	url    string
	ready  string // the line it printed when ready
	stdout *output
}

var readyLine = regexp.MustCompile(`(?m)^listening on (127\.0\.0\.1:\d+)$`)

// start runs cmd with the token and PORT=0 (a free port, which the receiver
// reports), waits until it is listening, and kills it when the test ends.
func start(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	stdout, stderr := new(output), new(output)
	cmd.Env = append(os.Environ(), "HERALD_WEBHOOK_TOKEN="+token, "PORT=0")
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

func (r *running) waitForLine(t *testing.T, line string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range r.lines() {
			if l == line {
				return
			}
		}
	}
	t.Errorf("printed %q; want a line %q", r.lines(), line)
}

// output collects a process's output; safe to read while it is written.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
