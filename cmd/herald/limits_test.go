package main_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/store"
)

// `herald accounts limits` sets an account's limits on the database, shows
// them, puts them back to the default, and refuses bad values naming the
// flag, changing nothing.
func TestAccountsLimitsCommand(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	if code, out := runToEnd(t, env, "migrate", "--create"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	m := createdRE.FindStringSubmatch(accountsCLI(t, env, 0, "create", "--name", "Shop", "--owner-email", "shop@example.com"))
	if m == nil {
		t.Fatal("create printed no account")
	}
	id := m[1]
	if out := accountsCLI(t, env, 0, "limits", id, "--webhooks", "10", "--api-rps", "5"); out != "account "+id+": webhooks 10, API requests per second 5\n" {
		t.Errorf("limits printed %q", out)
	}
	for _, tc := range []struct {
		code int
		args []string
		want string
	}{
		{2, []string{"limits", id, "--webhooks", "0"}, `--webhooks "0": want a whole number from 1 to 1000000, or default`},
		{2, []string{"limits", id, "--webhooks", "3", "--api-rps", "1.5"}, `--api-rps "1.5": want a whole number`},
		{2, []string{"limits", id, "--api-rps", "-2"}, `--api-rps "-2"`},
		{1, []string{"limits", store.NewID(), "--webhooks", "3"}, "no account"},
	} {
		if out := accountsCLI(t, env, tc.code, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("accounts %v printed %q; want %q", tc.args, out, tc.want)
		}
	}
	if out := accountsCLI(t, env, 0, "list", "--json"); !strings.Contains(out, `"webhooks": 10`) || !strings.Contains(out, `"apiRequestsPerSecond": 5`) {
		t.Errorf("list --json after refused changes printed %q; want the limits unchanged", out)
	}
	if out := accountsCLI(t, env, 0, "limits", id, "--webhooks", "default"); out != "account "+id+": webhooks default (no cap), API requests per second 5\n" {
		t.Errorf("limits --webhooks default printed %q", out)
	}
}
