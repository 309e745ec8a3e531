package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestDocsCurlExamplesWork runs every shell block of README.md and docs/*.md
// that calls curl, as written, against a real herald: only the address, the
// token and the ids a reader would paste in are filled in. curl fails on any
// answer of 400 or more, so an example the server refuses fails the test.
func TestDocsCurlExamplesWork(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("curl")
	heraldtest.SkipUnless(t, err == nil, "curl is not installed")
	pages, _ := filepath.Glob("../../../docs/*.md")
	pages = append(pages, "../../../README.md")
	const operatorToken = "docs-operator-token-0123456789abcdef"
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("docs", rcv.URL, "license.created")
	var p struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "Docs"}, &p)
	addr := strings.TrimPrefix(h.URL, "http://")
	block := regexp.MustCompile("(?s)```(?:sh|bash|shell)\n(.*?)```")
	fill := strings.NewReplacer(
		"localhost:8080", addr, "127.0.0.1:8080", addr,
		"http://127.0.0.1:9000/", rcv.URL+"/",
		"<product id>", p.ID,
	)
	ran := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(text, -1) {
			script := string(m[1])
			if !strings.Contains(script, "curl ") {
				continue
			}
			ran++
			// The token is printed at first start; the reader exports it.
			script = regexp.MustCompile(`(?m)^export TOKEN=.*$`).ReplaceAllString(script, "")
			script = "set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 30 \"$@\"; }\n" + fill.Replace(script)
			cmd := exec.CommandContext(t.Context(), "bash", "-c", script)
			cmd.Dir = t.TempDir() // examples may write a file
			cmd.Env = append(os.Environ(), "TOKEN="+h.Token, "WEBHOOK_ID="+hook.ID, "HERALD_OPERATOR_TOKEN="+operatorToken)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: an example fails as written (%v):\n%s\noutput:\n%s", filepath.Base(page), err, m[1], out)
			}
		}
	}
	if ran == 0 {
		t.Fatal("found no curl example in the docs; has the pattern drifted?")
	}
}
