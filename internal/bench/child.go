package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// child is a herald serving on loopback as a process of its own, on a fresh
// store, so that its CPU time and memory are its own.
type child struct {
	url, token string
	dbURL      string // the store it serves, to which more processes may join
	keyFile    string
	cmd        *exec.Cmd // nil for a peer: a sender the bench does not run
	out        *bytes.Buffer
	client     *http.Client
	drop       func() // drops the fresh store
	done       chan struct{}
	// metricsFile, when set, receives the child's /metrics as its stop
	// finds them.
	metricsFile string
}

// startChild starts binary serve on a fresh store: a SQLite file in a new
// directory, or a new schema of the PostgreSQL database at pgBase.
func startChild(ctx context.Context, binary, pgBase string, env ...string) (*child, error) {
	return startChildWith(ctx, binary, pgBase, nil, env...)
}

// prepareFunc readies a child's fresh store before the child starts: it gets
// the store's URL, the key file the child will read, and the API token the
// child's first account is to have.
type prepareFunc func(ctx context.Context, dbURL, keyFile, token string) error

// startChildWith is startChild with a store prepared first (prepare may be
// nil).
func startChildWith(ctx context.Context, binary, pgBase string, prepare prepareFunc, env ...string) (*child, error) {
	dir, err := os.MkdirTemp("", "herald-bench")
	if err != nil {
		return nil, err
	}
	drop := func() { os.RemoveAll(dir) }
	dbURL := "sqlite:" + filepath.Join(dir, "herald.db")
	if pgBase != "" {
		u, dropSchema, err := newSchema(ctx, pgBase)
		if err != nil {
			drop()
			return nil, err
		}
		dbURL, drop = u, func() { dropSchema(); os.RemoveAll(dir) }
	}
	addr, err := freeAddr()
	if err != nil {
		drop()
		return nil, err
	}
	token := "hrld_bench_" + randomHex(16)
	keyFile := filepath.Join(dir, "herald.key")
	if prepare != nil {
		if err := prepare(ctx, dbURL, keyFile, token); err != nil {
			drop()
			return nil, fmt.Errorf("prepare the store: %w", err)
		}
	}
	return launch(ctx, binary, addr, dbURL, keyFile, token, drop, env...)
}

// join starts another herald serving first's store, as a second process of
// one deployment does: the same database, key and first account. Its drop
// is nothing; first's drops the store.
func join(ctx context.Context, binary string, first *child, env ...string) (*child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return launch(ctx, binary, addr, first.dbURL, first.keyFile, first.token, func() {}, env...)
}

// launch starts binary serve at addr on the store at dbURL and waits until
// it is ready.
func launch(ctx context.Context, binary, addr, dbURL, keyFile, token string, drop func(), env ...string) (*child, error) {
	c := &child{url: "http://" + addr, token: token, dbURL: dbURL, keyFile: keyFile, out: &bytes.Buffer{}, drop: drop, done: make(chan struct{}),
		client: newClient()}
	c.cmd = exec.Command(binary, "serve")
	c.cmd.Env = append(os.Environ(),
		"HERALD_ADDR="+addr,
		"HERALD_DATABASE_URL="+dbURL,
		"HERALD_SECRET_KEY_FILE="+keyFile,
		"HERALD_BOOTSTRAP_EMAIL=bench@example.com",
		"HERALD_BOOTSTRAP_PASSWORD=bench password "+randomHex(8),
		"HERALD_BOOTSTRAP_TOKEN="+token,
		// The receivers are on loopback; the bench measures delivery,
		// not the rate limits; and the logs of a run are not kept.
		"HERALD_ALLOW_PRIVATE_NETWORKS=true",
		"HERALD_RATE_LIMIT=0",
		"HERALD_RATE_LIMIT_ANONYMOUS=0",
		"HERALD_RETENTION=0",
		"HERALD_LOG_LEVEL=warn",
	)
	c.cmd.Env = append(c.cmd.Env, env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		drop()
		return nil, fmt.Errorf("start herald: %w", err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := c.client.Get(c.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case <-c.done:
			c.stop()
			return nil, fmt.Errorf("herald exited at start:\n%s", c.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("herald not ready after 60s:\n%s", c.out)
		}
	}
}

// as returns the child as another account sees it: its calls carry token.
func (c *child) as(token string) *child {
	other := *c
	other.token = token
	return &other
}

func newClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
}

// stop ends the child (SIGTERM, then SIGKILL after 10 s) and drops its store.
// A peer is not the bench's to stop.
func (c *child) stop() {
	if c.cmd == nil {
		return
	}
	c.terminate()
	c.drop()
}

// terminate ends the child and keeps its store; again, it does nothing.
// When asked (metricsFile), it first saves the child's /metrics.
func (c *child) terminate() {
	if c.cmd == nil {
		return
	}
	if c.metricsFile != "" {
		c.saveMetrics()
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// usage reads the child's CPU seconds so far (user and system) and its peak
// resident memory in bytes, from /proc.
func (c *child) usage() (cpu float64, peakRSS int64) {
	if c.cmd == nil {
		return 0, 0
	}
	pid := c.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name, which is in parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			cpu = (ut + st) / 100 // USER_HZ is 100 on Linux
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				peakRSS = kb << 10
			}
		}
	}
	return cpu, peakRSS
}

// call makes an API call and decodes the answer into out.
func (c *child) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

// newSchema creates a schema in the PostgreSQL database at base and returns
// base with search_path set to it, and the function that drops it.
func newSchema(ctx context.Context, base string) (string, func(), error) {
	schema := "herald_bench_" + randomHex(8)
	admin, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	adminURL := adminURL(admin)
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+schema)
	conn.Close(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	// herald's connections are named after the schema, so that the bench
	// knows when all of them have ended (see pgMeter.cost).
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, adminURL); err == nil {
			conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
			conn.Close(ctx)
		}
	}
	return u.String(), drop, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// saveMetrics writes the child's /metrics to its metricsFile. A failure is
// said in the child's output, not fatal: the figures of the run stand.
func (c *child) saveMetrics() {
	resp, err := c.client.Get(c.url + "/metrics")
	if err == nil {
		defer resp.Body.Close()
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil {
			err = os.WriteFile(c.metricsFile, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(c.out, "bench: save metrics: %v\n", err)
	}
}
