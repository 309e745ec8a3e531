package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestReadmeFlowsRunTopToBottom follows the README as a newcomer does, in
// its order, on one herald: the quick start's two terminals (herald serve
// and herald listen, started with the arguments the README gives them),
// then every other block that makes webhooks (the quick start's curl calls
// and the everyday command-line work), line by line, with herald on PATH.
// Only what a reader pastes in is filled in: the token printed at first
// start, a free port in place of 8080 and 9000, and the ids the README
// writes as <product id>, <log id> and <webhook id>, read as a reader would
// read them, from the answer just before. Each line must succeed, and every
// delivery must reach herald listen verified: a flow that makes a webhook
// listen cannot verify fails here. (internal/server's
// TestDocsCurlExamplesWork runs every curl example on its own, too.)
func TestReadmeFlowsRunTopToBottom(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```(?:sh|bash|shell)\n(.*?)```").FindAllStringSubmatch(string(text), -1) {
		blocks = append(blocks, m[1])
	}
	serveLine := regexp.MustCompile(`(?m)^herald (serve .*?)\s+# terminal 1$`)
	listenLine := regexp.MustCompile(`(?m)^herald (listen .*?)\s+# terminal 2$`)
	start := -1
	for i, b := range blocks {
		if serveLine.MatchString(b) && listenLine.MatchString(b) {
			start = i
		}
	}
	if start < 0 {
		t.Fatal("README: found no block starting herald serve and herald listen in two terminals; has the quick start changed?")
	}

	dir := t.TempDir()
	addr, listenAddr := freeAddr(t), freeAddr(t)
	listenPort := listenAddr[strings.LastIndex(listenAddr, ":")+1:]
	env := []string{"HERALD_ADDR=" + addr, "HERALD_DATABASE_URL=sqlite:" + filepath.Join(dir, "herald.db")}
	serve := command(t, env, strings.Fields(serveLine.FindStringSubmatch(blocks[start])[1])...)
	serve.url = "http://" + addr
	var token string
	heraldtest.Eventually(t, 30*time.Second, "the API token printed at first start", func() bool {
		m := regexp.MustCompile(`API token \(shown once\): (hrld_\S+)`).FindStringSubmatch(serve.out.String())
		if m != nil {
			token = m[1]
		}
		return m != nil
	})
	listen := command(t, nil, append(strings.Fields(listenLine.FindStringSubmatch(blocks[start])[1]), "--port", listenPort)...)
	heraldtest.Eventually(t, 20*time.Second, "herald listen to listen", func() bool { return strings.Contains(listen.out.String(), "listening on") })

	// herald on PATH, as the README assumes.
	bin := filepath.Dir(binary(t))
	fill := strings.NewReplacer("localhost:8080", addr, "127.0.0.1:8080", addr, "127.0.0.1:9000", listenAddr)
	api := func(path string, out any) {
		t.Helper()
		req, _ := http.NewRequest("GET", serve.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	newest := func(path string) string {
		var p struct{ Data []struct{ ID string } }
		api(path+"?limit=1", &p)
		if len(p.Data) == 0 {
			t.Fatalf("GET %s: nothing yet", path)
		}
		return p.Data[0].ID
	}
	created := regexp.MustCompile(`created webhook (\S+)`)
	var lastWebhook string
	ran := 0
	for _, b := range blocks[start+1:] {
		if !strings.Contains(b, "api webhooks -d") && !strings.Contains(b, "herald webhooks") {
			continue
		}
		ran++
		var prelude []string // what a line defines for the lines after it
		for _, line := range strings.Split(b, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || strings.HasPrefix(line, "#"):
				continue
			case strings.HasPrefix(line, "export HERALD_API_TOKEN="), strings.HasPrefix(line, "export TOKEN="):
				prelude = append(prelude, line[:strings.Index(line, "=")+1]+token)
				continue
			case regexp.MustCompile(`^\w+\(\) \{`).MatchString(line):
				prelude = append(prelude, fill.Replace(line))
				continue
			}
			if strings.Contains(line, "<product id>") {
				line = strings.ReplaceAll(line, "<product id>", newest("/v3/products"))
			}
			if strings.Contains(line, "<log id>") {
				line = strings.ReplaceAll(line, "<log id>", newest("/v3/webhook-event-logs"))
			}
			line = strings.ReplaceAll(line, "<webhook id>", lastWebhook)
			// curl fails on an answer of 400 or more, as in TestDocsCurlExamplesWork.
			script := "set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 30 \"$@\"; }\n" +
				strings.Join(prelude, "\n") + "\n" + fill.Replace(line)
			cmd := exec.CommandContext(t.Context(), "bash", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"HERALD_API_TOKEN=", "TOKEN=", "HERALD_SERVER="+serve.url) // the default, 127.0.0.1:8080, filled in
			out, err := cmd.CombinedOutput()
			t.Logf("$ %s\n%s", line, out)
			if err != nil {
				t.Fatalf("README: %q fails as written (%v):\n%s", line, err, out)
			}
			if m := created.FindStringSubmatch(string(out)); m != nil {
				lastWebhook = m[1]
			} else if m := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(out)); m != nil && strings.Contains(line, "api webhooks -d") {
				lastWebhook = m[1]
			}
		}
	}
	if ran < 2 {
		t.Fatalf("ran %d README blocks after the quick start's terminals; want the quick start's calls and the everyday work", ran)
	}

	// Every delivery reached herald listen and was verified there.
	var logs struct {
		Data []struct{ ID, Status, Event string }
	}
	heraldtest.Eventually(t, 60*time.Second, "every log delivered", func() bool {
		api("/v3/webhook-event-logs?limit=500", &logs)
		for _, l := range logs.Data {
			if l.Status != "succeeded" {
				return false
			}
		}
		return len(logs.Data) >= 2
	})
	// Only the README's own --check-verification sends a forged request.
	out := listen.out.String()
	forged := 0
	for _, b := range blocks[start+1:] {
		forged += strings.Count(b, "--check-verification")
	}
	if strings.Count(out, "NOT VERIFIED") != forged || strings.Count(out, "  verified") < len(logs.Data) {
		t.Errorf("herald listen printed\n%s\nwant %d deliveries, each verified, and %d forged test(s) refused", out, len(logs.Data), forged)
	}
	if t.Failed() {
		fmt.Println(serve.out.String())
	}
}
