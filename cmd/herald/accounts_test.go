package main_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// envValue returns the value of name in env.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// accountsCLI runs `herald accounts …` with env and fails the test unless
// it exits with want.
func accountsCLI(t *testing.T, env []string, want int, args ...string) string {
	t.Helper()
	code, out := runToEnd(t, env, append([]string{"accounts"}, args...)...)
	if code != want {
		t.Fatalf("herald accounts %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

var createdRE = regexp.MustCompile(`created account (\S+) \(Shop\); its owner signs in as shop@example.com\nowner's portal password \(shown once\): (\S+)\nAPI token \(shown once\): (\S+)\n`)

// On SQLite, with herald stopped (SQLite serves one process): an account
// is created with credentials that work, listed, given a portal link, its
// owner's password reset, and deleted; bad input is refused naming the
// flag, and changes nothing.
func TestAccountsCommandsOnSQLite(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	if code, out := runToEnd(t, env, "migrate", "--create"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	m := createdRE.FindStringSubmatch(accountsCLI(t, env, 0, "create", "--name", "Shop", "--owner-email", "shop@example.com"))
	if m == nil {
		t.Fatal("create printed no account, password and token")
	}
	id, password, token := m[1], m[2], m[3]
	// A command line herald cannot read exits 2, a refusal 1.
	for _, tc := range []struct {
		code int
		args []string
		want string
	}{
		{1, []string{"create", "--name", "X", "--owner-email", "shop@example.com"}, "--owner-email shop@example.com already signs in"},
		{2, []string{"create", "--name", "", "--owner-email", "Ada <ada@example.com>"}, "--name must be 1 to 200 characters; --owner-email must be an email address"},
		{1, []string{"delete", store.NewID()}, "no account"},
		{2, []string{"link", id}, "--public-url or $HERALD_PUBLIC_URL is required"},
		{2, []string{"link", id, "--public-url", "http://portal.example", "--ttl", "3h"}, "--ttl 3h0m0s: want from 10s to 1h0m0s"},
		{1, []string{"reset-password", "--email", "nobody@example.com"}, "no one signs in as nobody@example.com"},
	} {
		if out := accountsCLI(t, env, tc.code, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("accounts %v printed %q; want %q", tc.args, out, tc.want)
		}
	}
	if out := accountsCLI(t, env, 0, "--help"); !strings.Contains(out, "herald accounts reset-password --email E") {
		t.Errorf("--help printed %q; want every accounts command", out)
	}
	if out := accountsCLI(t, env, 0, "list"); strings.Count(out, "\n") != 2 || !strings.Contains(out, id) {
		t.Errorf("list printed %q; want a header and the one account", out)
	}
	out := accountsCLI(t, env, 0, "link", id, "--public-url", "https://hooks.example.com/")
	if !regexp.MustCompile(`^https://hooks\.example\.com/signin/link\?token=[A-Za-z0-9_-]{43}\n\(works once, until `).MatchString(out) {
		t.Errorf("link printed %q", out)
	}
	rm := regexp.MustCompile(`new portal password for shop@example.com \(shown once; every session of theirs has ended\): (\S+)\n`).
		FindStringSubmatch(accountsCLI(t, env, 0, "reset-password", "--email", "shop@example.com"))
	if rm == nil || rm[1] == password {
		t.Fatalf("reset-password printed no new password")
	}
	checkPassword(t, env, "shop@example.com", rm[1], password)

	// Served: the account's token works; deleted (herald stopped again), it
	// does not.
	addr := freeAddr(t)
	p := startServe(t, env, addr)
	if code := apiStatus(t, p.url, token); code != http.StatusOK {
		t.Errorf("the created account's token: %d; want 200", code)
	}
	p.stop(t, syscall.SIGTERM)
	if out := accountsCLI(t, env, 0, "delete", id); !strings.Contains(out, "deleted account "+id) {
		t.Errorf("delete printed %q", out)
	}
	if out := accountsCLI(t, env, 0, "list"); strings.Contains(out, id) {
		t.Errorf("list after delete printed %q", out)
	}
	p = startServe(t, env, addr)
	if code := apiStatus(t, p.url, token); code != http.StatusUnauthorized {
		t.Errorf("a deleted account's token: %d; want 401", code)
	}
}

// On PostgreSQL the commands work while herald serves: an account created
// from the command line answers at once, and is refused at once once
// deleted.
func TestAccountsCommandsBesideARunningHeraldOnPostgres(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	env = append(env, "HERALD_DATABASE_URL="+heraldtest.PostgresURL(t))
	p := startServe(t, env, freeAddr(t))
	m := createdRE.FindStringSubmatch(accountsCLI(t, env, 0, "create", "--name", "Shop", "--owner-email", "shop@example.com"))
	if m == nil {
		t.Fatal("create printed no account, password and token")
	}
	if code := apiStatus(t, p.url, m[3]); code != http.StatusOK {
		t.Errorf("the new account's token: %d; want 200", code)
	}
	if out := accountsCLI(t, env, 0, "list"); strings.Count(out, "\n") != 3 {
		t.Errorf("list printed %q; want a header, the first account and the new one", out)
	}
	accountsCLI(t, env, 0, "delete", m[1])
	if code := apiStatus(t, p.url, m[3]); code != http.StatusUnauthorized {
		t.Errorf("the deleted account's token: %d; want 401", code)
	}
}

// apiStatus is the status of GET /v3/account with token.
func apiStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v3/account", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkPassword opens the database (herald is stopped) and checks that the
// user signs in with password and no longer with old.
func checkPassword(t *testing.T, env []string, email, password, old string) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(envValue(env, "HERALD_SECRET_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), envValue(env, "HERALD_DATABASE_URL"), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o, err := st.PersonByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	if !auth.CheckPassword(o.PasswordHash, password) || auth.CheckPassword(o.PasswordHash, old) {
		t.Errorf("%s: the new password is not the one that works", email)
	}
}

// --operator-token turns the operator calls on, and is never printed; a
// short one, or a --public-url that is not an address, is refused before
// anything starts.
func TestServeOperatorTokenAndPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want string }{
		{"HERALD_OPERATOR_TOKEN=short", "--operator-token must be at least 32 characters"},
		{"HERALD_PUBLIC_URL=hooks.example.com", `--public-url "hooks.example.com": want an http or https address`},
	} {
		env, _ := serveEnv(t)
		code, out := runToEnd(t, append(env, "HERALD_ADDR="+freeAddr(t), tc.env), "serve")
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, printed %q; want a failure saying %s", tc.env, code, out, tc.want)
		}
	}
	const token = "an-operator-token-of-forty-characters-00"
	env, _ := serveEnv(t)
	p := startServe(t, append(env, "HERALD_OPERATOR_TOKEN="+token, "HERALD_PUBLIC_URL=https://hooks.example.com"), freeAddr(t))
	req, _ := http.NewRequest("POST", p.url+"/v3/operator/accounts", strings.NewReader(`{"name":"Shop","ownerEmail":"shop@example.com"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("create an account with the operator token: %d; want 201", resp.StatusCode)
	}
	if code := apiStatus(t, p.url, token); code != http.StatusUnauthorized {
		t.Errorf("the operator token on an account call: %d; want 401", code)
	}
	if strings.Contains(p.out.String(), token) {
		t.Error("herald printed the operator token")
	}
}
