package testdb

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// PostgresServer is a private PostgreSQL server for one test, which the test
// may stop and start: tests of outages must not touch the server others use.
type PostgresServer struct {
	bin  string // the directory of initdb, pg_ctl and postgres
	dir  string // holds data/, the socket and the log
	port int
	as   []string // runuser -u postgres -- when running as root
}

// StartPostgres initialises a new cluster in a temporary directory with the
// PostgreSQL server binaries found under /usr/lib/postgresql (Debian's
// layout), starts it on a free loopback port and stops and removes it at the
// end of the test. PostgreSQL refuses to run as root, so as root the server
// runs as the postgres user. Without the binaries the test skips (fails
// under CI).
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	SkipUnless(t, len(bins) > 0, "the PostgreSQL server binaries (pg_ctl, initdb) are not under /usr/lib/postgresql")
	slices.Sort(bins)
	p := &PostgresServer{bin: filepath.Dir(bins[len(bins)-1])}
	// Not t.TempDir(): the postgres user must be able to reach it.
	dir, err := os.MkdirTemp("", "herald-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		SkipUnless(t, err == nil, "running as root and there is no postgres user to run PostgreSQL as")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.as = []string{"runuser", "-u", "postgres", "--"}
	}
	p.run(t, "initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p.Start(t)
	t.Cleanup(func() {
		// Immediate: the test is over, nothing needs a clean shutdown.
		p.command("pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop").Run()
	})
	return p
}

// URL is the server's postgres database, as the superuser postgres.
func (p *PostgresServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Start starts the server (again) and waits until it accepts connections.
func (p *PostgresServer) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60", p.port, p.dir)
	p.run(t, "pg_ctl", "-D", p.data(), "-o", opts, "-l", filepath.Join(p.dir, "server.log"), "-w", "-t", "60", "start")
}

// Stop stops the server as an operator restarting it would (a fast
// shutdown: sessions are ended, transactions in progress roll back).
func (p *PostgresServer) Stop(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", p.data(), "-m", "fast", "-w", "-t", "60", "stop")
}

func (p *PostgresServer) data() string { return filepath.Join(p.dir, "data") }

// command is one of the server's programs, run as the postgres user when
// the test runs as root.
func (p *PostgresServer) command(program string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, program)
	if len(p.as) > 0 {
		return exec.Command(p.as[0], append(append(slices.Clone(p.as[1:]), path), args...)...)
	}
	return exec.Command(path, args...)
}

func (p *PostgresServer) run(t testing.TB, program string, args ...string) {
	t.Helper()
	cmd := p.command(program, args...)
	cmd.Dir = p.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
		t.Fatalf("%s: %v\n%s\n%s", program, err, out, log)
	}
}

// Pause stops every process of the server (SIGSTOP) until Resume: a
// database that stalls for everyone at once, as a disk that stops
// flushing or a paused machine makes it. Connections stay open and
// statements wait; nothing is refused.
func (p *PostgresServer) Pause(t testing.TB) { p.signal(t, "STOP") }

// Resume lets a paused server go on.
func (p *PostgresServer) Resume(t testing.TB) { p.signal(t, "CONT") }

// signal sends sig to the server's postmaster and its children.
func (p *PostgresServer) signal(t testing.TB, sig string) {
	t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
	if err != nil {
		t.Fatalf("read the server's pid: %v", err)
	}
	pid := strings.SplitN(string(pidFile), "\n", 2)[0]
	// The children first: a postmaster stopped first cannot notice them go.
	if out, err := exec.Command("pkill", "-"+sig, "-P", pid).CombinedOutput(); err != nil {
		t.Fatalf("signal the server's processes %s: %v %s", sig, err, out)
	}
	if out, err := exec.Command("kill", "-"+sig, pid).CombinedOutput(); err != nil {
		t.Fatalf("signal the server %s: %v %s", sig, err, out)
	}
}
