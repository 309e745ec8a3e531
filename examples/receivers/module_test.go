package receivers_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// receiverMain is a receiver's whole program, using what receivers use.
const receiverMain = `package main

import (
	"net/http"

	"github.com/heraldhq/herald/webhook"
)

func main() {
	http.Handle("/", webhook.Middleware("whsec_example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := webhook.Parse(webhook.RawBody(r)); err != nil {
			http.Error(w, "malformed payload", http.StatusBadRequest)
		}
	})))
	http.ListenAndServe("127.0.0.1:8000", nil)
}
`

var goLine = regexp.MustCompile(`(?m)^go (\S+)$`)

// TestReceiverModuleKeepsItsGoLine builds a receiver module that declares an
// older Go than herald's and requires the webhook module (from this working
// tree, offline), and checks that go mod tidy leaves its go line alone: the
// webhook module, not herald's, sets the floor.
func TestReceiverModuleKeepsItsGoLine(t *testing.T) {
	t.Parallel()
	webhookDir, err := filepath.Abs("../../webhook")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(webhookDir, "go.mod"))
	if err != nil {
		t.Fatalf("read the webhook module's go.mod: %v", err)
	}
	m := goLine.FindSubmatch(mod)
	if m == nil {
		t.Fatalf("the webhook module's go.mod has no go line:\n%s", mod)
	}
	floor := string(m[1])

	for _, version := range []string{floor, "1.22"} {
		t.Run("go "+version, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			goMod := fmt.Sprintf("module example.com/receiver\n\ngo %s\n\nrequire github.com/heraldhq/herald/webhook v0.0.0-00010101000000-000000000000\n\nreplace github.com/heraldhq/herald/webhook => %s\n", version, webhookDir)
			writeFile(t, filepath.Join(dir, "go.mod"), goMod)
			writeFile(t, filepath.Join(dir, "main.go"), receiverMain)
			for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
				cmd := exec.Command("go", args...)
				cmd.Dir = dir
				// The toolchain running the test, no download, no network,
				// no workspace: only the module and the working tree.
				cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			tidied, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatalf("read the tidied go.mod: %v", err)
			}
			if m := goLine.FindSubmatch(tidied); m == nil || string(m[1]) != version {
				t.Errorf("go.mod after go mod tidy:\n%s\nwant the go line still go %s", tidied, version)
			}
			if strings.Contains(string(tidied), "\ntoolchain ") {
				t.Errorf("go.mod after go mod tidy:\n%s\nwant no toolchain line", tidied)
			}
		})
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}
