package receivers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	heraldclient "github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// rotationCase is one request herald signed, checked against one set of
// tokens a receiver may hold.
type rotationCase struct {
	Name      string   `json:"name"`
	Body      string   `json:"body"` // base64 of the raw bytes
	Signature *string  `json:"signature"`
	Tokens    []string `json:"tokens"`
	Want      bool     `json:"want"`
}

// harnesses run a docs code block as a program: the block, then code that
// reads the cases as JSON on stdin and prints the verdicts as a JSON array.
var harnesses = []struct {
	lang, program, language, ext, harness string
}{
	{"js", "node", "Node.js", ".js", `
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  console.log(JSON.stringify(cases.map((c) =>
    verifyAny(Buffer.from(c.body, 'base64'), c.signature === null ? undefined : c.signature, c.tokens))));
});
`},
	{"python", "python3", "Python 3", ".py", `
import json as _json, sys as _sys
_cases = _json.load(_sys.stdin)
print(_json.dumps([verify_any(base64.b64decode(c["body"]), c["signature"], [t.encode() for t in c["tokens"]]) for c in _cases]))
`},
}

// TestDocsRotationCodeAcceptsEitherToken runs the Node.js and Python code of
// docs/receiving.md, "Rotating the token", on requests a real herald signed
// before, during and after a rotation: each must be accepted exactly by the
// token sets the page says accept it.
func TestDocsRotationCodeAcceptsEitherToken(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../docs/receiving.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Rotating the token\n")
	if !ok {
		t.Fatal(`docs/receiving.md has no "## Rotating the token" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	cases := signedDuringARotation(t)
	for _, hn := range harnesses {
		t.Run(hn.program, func(t *testing.T) {
			t.Parallel()
			m := regexp.MustCompile("(?s)```" + hn.lang + "\n(.*?)```").FindStringSubmatch(section)
			if m == nil {
				t.Fatalf("the section has no ```%s block", hn.lang)
			}
			path, err := exec.LookPath(hn.program)
			heraldtest.SkipUnless(t, err == nil, hn.language+" is not installed (no "+hn.program+" on PATH), so the docs' "+hn.language+" rotation code is untested")
			file := filepath.Join(t.TempDir(), "verify"+hn.ext)
			if err := os.WriteFile(file, []byte(m[1]+hn.harness), 0o600); err != nil {
				t.Fatal(err)
			}
			input, _ := json.Marshal(cases)
			cmd := exec.Command(path, file)
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", hn.program, err, stderr.String())
			}
			var got []bool
			if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
				t.Fatalf("%s printed %q (%v); want %d verdicts", hn.program, out, err, len(cases))
			}
			for i, c := range cases {
				if got[i] != c.Want {
					t.Errorf("%s: accepted %t; want %t", c.Name, got[i], c.Want)
				}
			}
		})
	}
}

// signedDuringARotation has a real herald sign requests to a recording
// receiver before a rotation, during it (a delivery, and a Test signed with
// the next token) and after it is finished, and returns each against every
// set of tokens a receiver holds on the way, with the verdict the docs give.
func signedDuringARotation(t *testing.T) []rotationCase {
	t.Helper()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	ctx := context.Background()
	hook, err := h.API.CreateWebhook(ctx, heraldclient.WebhookCreate{Name: "docs rotation", URL: rcv.URL,
		Events: []string{"license.created"}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	deliver := func() (body []byte, signature, next string) {
		t.Helper()
		n := rcv.Count()
		h.CreateLicense(map[string]any{"customer": nonASCII})
		heraldtest.Eventually(t, 20*time.Second, "a delivery", func() bool { return rcv.Count() > n })
		r := rcv.Requests()[n]
		return r.Body, r.Header.Get(webhook.SignatureHeader), r.Header.Get(webhook.NextSignatureHeader)
	}

	if _, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, next, err := h.API.WebhookTokens(ctx, hook.ID)
	if err != nil || next == "" {
		t.Fatalf("next token: %q, %v", next, err)
	}
	duringBody, duringSig, duringNext := deliver()
	if webhook.Verify(next, duringBody, duringNext) != nil {
		t.Fatalf("a delivery during the overlap: webhook-signature-next %q does not verify under the next token", duringNext)
	}
	test, err := h.API.TestWebhook(ctx, hook.ID, heraldclient.TestRequest{SignWith: "next"})
	if err != nil || test.SignedWith != "next" {
		t.Fatalf("test signed with the next token: %+v, %v", test, err)
	}
	if _, err := h.API.FinishWebhookTokenRotation(ctx, hook.ID); err != nil {
		t.Fatal(err)
	}
	afterBody, afterSig, afterNext := deliver()
	if afterNext != "" {
		t.Errorf("a delivery after the rotation carries webhook-signature-next %q; want none", afterNext)
	}

	holds := []struct {
		label  string
		tokens []string
	}{{"old", []string{token}}, {"both", []string{token, next}}, {"next", []string{next}}}
	var cases []rotationCase
	// add checks body and signature against every set of tokens; those
	// named in accepted must accept it, the others refuse it.
	add := func(name string, body []byte, signature *string, accepted ...string) {
		for _, hold := range holds {
			cases = append(cases, rotationCase{Name: name + ", receiver holding " + hold.label,
				Body: base64.StdEncoding.EncodeToString(body), Signature: signature, Tokens: hold.tokens,
				Want: slices.Contains(accepted, hold.label)})
		}
	}
	add("delivery during the overlap", duringBody, &duringSig, "old", "both")
	add("test signed with the next token", []byte(test.Request.Body), &test.Request.Signature, "both", "next")
	add("delivery after the rotation", afterBody, &afterSig, "both", "next")
	add("no signature", afterBody, nil)
	return cases
}
