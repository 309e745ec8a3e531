// Package proxytest starts a real egress proxy for tests: Debian's
// tinyproxy on loopback, taking CONNECT to any port from loopback only,
// with Basic credentials when asked, and counting the tunnels it made from
// its log. It imports only testdb (for its skip rule).
package proxytest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testdb"
)

// Proxy is a real egress proxy on loopback: Debian's tinyproxy, which
// takes CONNECT to any port (no ConnectPort line) from loopback only, with
// Basic credentials when user is set. Its log says which tunnels it made.
type Proxy struct {
	URL string // http://[user:pass@]127.0.0.1:port
	log string // its log file
}

// Start starts one for the test, stopped at its end; user and pass, when
// set, are the credentials it asks for. It skips (fails under CI=true)
// without tinyproxy.
func Start(t testing.TB, user, pass string) *Proxy {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	testdb.SkipUnless(t, err == nil, "tinyproxy is not installed (apt-get install tinyproxy)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	p := &Proxy{URL: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "tinyproxy.log")}
	conf := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nLogFile %q\nLogLevel Connect\nMaxClients 50\n", port, p.log)
	if user != "" {
		conf += fmt.Sprintf("BasicAuth %s %s\n", user, pass)
		p.URL = fmt.Sprintf("http://%s:%s@127.0.0.1:%d", user, pass, port)
	}
	confFile := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", confFile) // -d: in the foreground, so the test owns it
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not listen on %d: %v", port, err)
		}
	}
}

// Tunnels counts the CONNECT tunnels the proxy's log records.
func (p *Proxy) Tunnels(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "Established connection to host")
}
