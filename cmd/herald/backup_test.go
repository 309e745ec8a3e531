package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // to check the copy with PRAGMA integrity_check

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// sqliteEnv is the environment of a herald on a new SQLite file in dir
// whose key is kept in the key file beside it (herald.db.key), as the quick
// start runs it; HERALD_SECRET_KEY is set empty so that the test's own
// environment cannot give a key.
func sqliteEnv(t *testing.T, dir, token string) []string {
	t.Helper()
	return []string{
		"HERALD_DATABASE_URL=sqlite:" + filepath.Join(dir, "herald.db"),
		"HERALD_SECRET_KEY=", "HERALD_SECRET_KEY_FILE=",
		"HERALD_BOOTSTRAP_TOKEN=" + token,
		"HERALD_ALLOW_PRIVATE_NETWORKS=true",
	}
}

// A backup taken while events are fired and delivered holds every event,
// log and attempt committed before it began; restored into a new place, it
// starts a herald that finds them all. The copy passes integrity_check, its
// key is beside it, and neither backup nor restore replaces a file.
func TestBackupUnderLoadRestoresEveryCommittedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	token := auth.NewAPIToken()
	dir := t.TempDir()
	env := sqliteEnv(t, dir, token)
	p := startServe(t, env, freeAddr(t))
	api := client.New(p.url, token, http.DefaultClient)
	rcv := heraldtest.NewReceiver(t)
	hook, err := api.CreateWebhook(ctx, client.WebhookCreate{Name: "backup", URL: rcv.URL, Events: []string{"license.created"}})
	if err != nil {
		t.Fatal(err)
	}
	product, err := api.CreateProduct(ctx, "Pro", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Events are fired one after another until the end of the test's load.
	stop := make(chan struct{})
	var fired sync.WaitGroup
	var mu sync.Mutex
	var acked []string // licenses created, in order
	var failures []error
	fired.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := api.CreateLicense(ctx, client.LicenseCreate{ProductID: product.ID})
			mu.Lock()
			if err != nil {
				failures = append(failures, err)
			} else {
				acked = append(acked, l.ID)
			}
			mu.Unlock()
		}
	})
	stopFiring := sync.OnceFunc(func() { close(stop); fired.Wait() })
	t.Cleanup(stopFiring)
	heraldtest.Eventually(t, time.Minute, "deliveries under way", func() bool { return rcv.Count() >= 50 })

	before := committedLogs(t, api) // all committed before the backup begins
	copyPath := filepath.Join(t.TempDir(), "herald-copy.db")
	// And the licenses acknowledged up to the moment it begins: the last of
	// them are in the -wal file alone, until a checkpoint.
	mu.Lock()
	licenses := slices.Clone(acked)
	mu.Unlock()
	out := runOK(t, env, "backup", "--to", copyPath)
	if !strings.Contains(out, "herald: its secret key is in "+copyPath+".key (mode 0600)") {
		t.Errorf("backup printed %q; want it to name the key file beside the copy", out)
	}
	delivered := rcv.Count()
	heraldtest.Eventually(t, time.Minute, "deliveries going on after the backup", func() bool { return rcv.Count() > delivered })
	stopFiring()
	if len(failures) > 0 {
		t.Errorf("%d of %d changes failed while the backup ran; the first: %v", len(failures), len(acked)+len(failures), failures[0])
	}
	t.Logf("%d logs read and %d licenses acknowledged before the backup, %d in all", len(before), len(licenses), len(acked))

	wantPrivate(t, copyPath, copyPath+".key")
	liveKey, _ := os.ReadFile(filepath.Join(dir, "herald.db.key"))
	if copyKey, _ := os.ReadFile(copyPath + ".key"); len(liveKey) == 0 || !bytes.Equal(copyKey, liveKey) {
		t.Errorf("the key beside the copy is not herald.db.key's")
	}
	wantIntegrity(t, copyPath)
	if out := runFails(t, env, "backup", "--to", copyPath); !strings.Contains(out, "--to "+copyPath+": "+copyPath+" already exists") {
		t.Errorf("a second backup to the same file printed %q; want a refusal naming --to", out)
	}

	restored := t.TempDir()
	renv := sqliteEnv(t, restored, token)
	if out := runOK(t, renv, "restore", "--from", copyPath); !strings.Contains(out, "its secret key is in "+filepath.Join(restored, "herald.db.key")) {
		t.Errorf("restore printed %q; want it to name the key file", out)
	}
	if out := runFails(t, renv, "restore", "--from", copyPath); !strings.Contains(out, "already exists; restoring would replace it: pass --force") {
		t.Errorf("a second restore printed %q; want a refusal", out)
	}
	q := startServe(t, renv, freeAddr(t))
	if out := runFails(t, renv, "restore", "--from", copyPath, "--force"); !strings.Contains(out, "a herald process is using it; stop it before restoring") {
		t.Errorf("restore --force under a running herald printed %q; want a refusal", out)
	}

	rapi := client.New(q.url, token, http.DefaultClient)
	if _, err := rapi.Webhook(ctx, hook.ID); err != nil {
		t.Fatalf("the webhook in the restored herald: %v", err)
	}
	for _, id := range licenses {
		req, _ := http.NewRequest("GET", q.url+"/v3/licenses/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("license %s, acknowledged before the backup began, in the restored herald: %d; want 200", id, resp.StatusCode)
		}
	}
	if logs := committedLogs(t, rapi); len(logs) < len(licenses) {
		t.Errorf("%d logs in the restored herald; want at least the %d of the licenses acknowledged before the backup", len(logs), len(licenses))
	}
	for _, want := range before {
		got, err := rapi.EventLog(ctx, want.ID)
		if err != nil {
			t.Errorf("log %s, committed before the backup, in the restored herald: %v", want.ID, err)
			continue
		}
		if got.EventID != want.EventID || got.Payload != want.Payload {
			t.Errorf("log %s restored with event %s; want %s and the same payload", want.ID, got.EventID, want.EventID)
		}
		for i, a := range want.Attempts {
			if i >= len(got.Attempts) || got.Attempts[i].Number != a.Number || !got.Attempts[i].SentAt.Equal(a.SentAt) {
				t.Errorf("log %s restored with attempts %+v; want its attempt %+v", want.ID, got.Attempts, a)
				break
			}
		}
	}
}

// committedLogs reads every event log with its attempts.
func committedLogs(t *testing.T, api *client.Client) []client.EventLog {
	t.Helper()
	ctx := context.Background()
	var logs []client.EventLog
	f := client.LogFilter{ListOptions: client.ListOptions{Limit: 500}}
	for {
		page, err := api.ListEventLogs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Data {
			full, err := api.EventLog(ctx, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, full)
		}
		if page.NextCursor == "" {
			return logs
		}
		f.Cursor = page.NextCursor
	}
}

// The commands refuse what they cannot do, naming the flag and saying
// what to do instead, and say plainly when the key is not written beside
// the copy.
func TestBackupAndRestoreRefusals(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t) // the key given by HERALD_SECRET_KEY
	if code, out := runToEnd(t, env, "migrate", "--create"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	out := runOK(t, env, "backup", "--to", copyPath)
	if !strings.Contains(out, "the secret key was given by --secret-key or $HERALD_SECRET_KEY, so no key file was written: the copy is useless without that key") {
		t.Errorf("backup with the key in the environment printed %q; want it to say where the key is", out)
	}
	if _, err := os.Stat(copyPath + ".key"); err == nil {
		t.Errorf("a key given in the environment was written beside the copy")
	}
	wantIntegrity(t, copyPath)

	other := []string{"HERALD_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "herald.db"), "HERALD_SECRET_KEY=", "HERALD_SECRET_KEY_FILE="}
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{env, []string{"backup"}, "backup: --to is required"},
		{append(env, "HERALD_DATABASE_URL=postgres://127.0.0.1/herald"), []string{"backup", "--to", copyPath + "2"}, "on PostgreSQL use pg_dump"},
		{append(env, "HERALD_DATABASE_URL=postgres://127.0.0.1/herald"), []string{"restore", "--from", copyPath}, "on PostgreSQL use pg_restore"},
		{other, []string{"backup", "--to", copyPath + "2"}, "no such database file"},
		{env, []string{"restore"}, "restore: --from is required"},
		{other, []string{"restore", "--from", copyPath}, "its key file " + copyPath + ".key is not there; put it beside the copy, or give the key with --secret-key"},
		{append(other, "HERALD_SECRET_KEY="+base64.StdEncoding.EncodeToString(make([]byte, 32))), []string{"restore", "--from", copyPath},
			"the secret key is not the one this database was created with"},
	} {
		if len(tc.args) == 1 { // a required flag left out: the command line, exit 2
			if code, out := runToEnd(t, tc.env, tc.args...); code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("herald %v: exit %d, %q; want exit 2 and %q", tc.args, code, out, tc.want)
			}
			continue
		}
		if out := runFails(t, tc.env, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("herald %v printed %q; want %q", tc.args, out, tc.want)
		}
	}
	// With the key in the environment, restore writes no key file either.
	restored := filepath.Join(t.TempDir(), "herald.db")
	renv := append(env, "HERALD_DATABASE_URL=sqlite:"+restored)
	if out := runOK(t, renv, "restore", "--from", copyPath); !strings.Contains(out, "no key file was written: start herald with the same --secret-key or $HERALD_SECRET_KEY") {
		t.Errorf("restore printed %q", out)
	}
	if _, err := os.Stat(restored + ".key"); err == nil {
		t.Errorf("restore wrote a key file for a key given in the environment")
	}
	if code, out := runToEnd(t, renv, "migrate"); code != 0 {
		t.Errorf("migrate on the restored file: exit %d\n%s", code, out)
	}
}

// runOK runs the binary and fails the test unless it exits 0.
func runOK(t *testing.T, env []string, args ...string) string {
	t.Helper()
	code, out := runToEnd(t, env, args...)
	if code != 0 {
		t.Fatalf("herald %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// runFails runs the binary and fails the test unless it exits 1.
func runFails(t *testing.T, env []string, args ...string) string {
	t.Helper()
	code, out := runToEnd(t, env, args...)
	if code != 1 {
		t.Fatalf("herald %s: exit %d; want 1\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// wantPrivate fails the test unless each file is readable by its owner alone.
func wantPrivate(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v; want 0600", p, st.Mode().Perm())
		}
	}
}

// wantIntegrity fails the test unless PRAGMA integrity_check passes on path.
func wantIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check of %s: %q, %v; want ok", path, check, err)
	}
}
