package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/herald once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "herald")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a herald serve process.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
}

func startProc(t *testing.T, env []string, addr string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), "serve")
	var stderr bytes.Buffer
	cmd.Env = append(os.Environ(), append(env, "HERALD_ADDR="+addr)...)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, url: "http://" + addr, stderr: &stderr}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	heraldtest.Eventually(t, 20*time.Second, "herald to be ready", func() bool {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func call(t *testing.T, base, token, method, path string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
}

func TestKilledServerLosesNoEvent(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	rand.Read(key)
	token := auth.NewAPIToken()
	env := []string{
		"HERALD_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
		"HERALD_BOOTSTRAP_TOKEN=" + token,
		"HERALD_ALLOW_PRIVATE_NETWORKS=true",
		"HERALD_ATTEMPT_TIMEOUT=1s", // leases last 2×1s+10s = 12s
		"HERALD_RETRY_INTERVAL=100ms",
	}
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
	p := startProc(t, env, addr)
	var hook struct{ ID, Token string }
	call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{"name": "crash", "url": rcv.URL, "events": []string{"license.created"}}, &hook)
	var product struct{ ID string }
	call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	const n = 20
	for range n {
		call(t, p.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
	}
	heraldtest.Eventually(t, 10*time.Second, "attempts in flight", func() bool { return rcv.Count() >= 5 })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	close(release)
	p = startProc(t, env, addr)
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
	// Within 10s: sooner than the dead process's 12s leases expire, because
	// on SQLite the restarted process knows they are orphaned and releases them.
	heraldtest.Eventually(t, 10*time.Second, "every event delivered after the restart", func() bool {
		var logs struct{ Data []struct{ Status string } }
		call(t, p.url, token, "GET", "/v3/webhook-event-logs?status=succeeded&limit=500", nil, &logs)
		return len(logs.Data) == n && len(delivered()) == n
	})
}

func TestSecondProcessOnOneSQLiteFileIsRefused(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	rand.Read(key)
	env := []string{
		"HERALD_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
	}
	startProc(t, env, freeAddr(t))
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
