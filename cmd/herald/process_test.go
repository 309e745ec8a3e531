package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// The tests in this package run the real binary, built once per test run.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds cmd/herald once per test run and returns its path. Every
// test that runs the binary gets it here, so -short skips them all here.
func binary(t *testing.T) string {
	t.Helper()
	heraldtest.SkipShort(t, "runs the herald binary")
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "herald-bin")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "herald")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serveEnv is the environment of a `herald serve` over a new SQLite file,
// with a random secret key and the API token it returns. It allows private
// networks, so that it delivers to receivers on loopback.
func serveEnv(t *testing.T) (env []string, apiToken string) {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	apiToken = auth.NewAPIToken()
	return []string{
		"HERALD_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
		"HERALD_BOOTSTRAP_TOKEN=" + apiToken,
		"HERALD_ALLOW_PRIVATE_NETWORKS=true",
	}, apiToken
}

// proc is a herald process started by a test.
type proc struct {
	cmd    *exec.Cmd
	url    string
	out    *heraldtest.Output // stdout and stderr
	exited chan struct{}      // closed once it has exited and cmd.ProcessState is set
}

// command starts the binary with args and env added to the test's
// environment; it is killed when the test ends.
func command(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return commandUnder(t, env, nil, args...)
}

// commandUnder is command run under a wrapper program, such as prlimit:
// wrapper then the binary's path then args.
func commandUnder(t *testing.T, env, wrapper []string, args ...string) *proc {
	t.Helper()
	argv := append(append(append([]string(nil), wrapper...), binary(t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	out := new(heraldtest.Output)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // fails harmlessly when it has exited
		<-p.exited
		if t.Failed() {
			t.Logf("herald %v printed:\n%s", args, out)
		}
	})
	return p
}

// stop sends sig to the process and waits for it to exit.
func (p *proc) stop(t *testing.T, sig os.Signal) *os.ProcessState {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("herald did not exit within 20s of %v", sig)
	}
	return p.cmd.ProcessState
}

// startServe runs `herald serve` on addr and waits until it is ready.
func startServe(t *testing.T, env []string, addr string) *proc {
	t.Helper()
	return startServeUnder(t, env, nil, addr)
}

// startServeUnder is startServe under a wrapper program (see commandUnder).
func startServeUnder(t *testing.T, env, wrapper []string, addr string) *proc {
	t.Helper()
	p := commandUnder(t, append(env, "HERALD_ADDR="+addr), wrapper, "serve")
	p.url = "http://" + addr
	heraldtest.Eventually(t, 20*time.Second, "herald serve to be ready", func() bool {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

var listening = regexp.MustCompile(`(?m)^listening on (http://127\.0\.0\.1:\d+)$`)

// startListen runs `herald listen` with args and waits until it prints the
// address it listens on.
func startListen(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := command(t, env, append([]string{"listen"}, args...)...)
	deadline := time.After(20 * time.Second)
	for {
		if m := listening.FindStringSubmatch(p.out.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("herald listen exited before it listened: %v\n%s", p.cmd.ProcessState, p.out)
		case <-deadline:
			t.Fatalf("herald listen printed no %q line within 20s:\n%s", listening, p.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// call calls herald's API at base with the API token and decodes the JSON
// answer into out (when not nil). It fails the test on an answer of 300 or
// more.
func call(t *testing.T, base, token, method, path string, body, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, answer, err)
		}
	}
}
