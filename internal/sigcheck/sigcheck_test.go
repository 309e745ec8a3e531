package sigcheck_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/sigcheck"
	"github.com/heraldhq/herald/webhook"
)

// body is a real herald body: compact, raw UTF-8, with accents, CJK and an
// emoji in it.
func body(t *testing.T) []byte {
	t.Helper()
	b, err := event.Build("01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00", event.LicenseCreated,
		event.Sample(event.LicenseCreated, time.Date(2026, 11, 21, 8, 7, 13, 120e6, time.UTC)), time.Date(2026, 11, 21, 8, 7, 13, 120e6, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hmacB64(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func reencode(t *testing.T, b []byte, f func(v any) ([]byte, error)) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := f(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCauses: for each mistake a receiver makes, the signature it ends up
// with is traced back to that mistake, and to no other category.
func TestCauses(t *testing.T) {
	t.Parallel()
	tok, prev, next := auth.NewWebhookToken(), auth.NewWebhookToken(), auth.NewWebhookToken()
	b := body(t)
	raw := strings.TrimPrefix(tok, "whsec_")
	decoded, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(msg []byte) []byte {
		m := hmac.New(sha256.New, []byte(tok))
		m.Write(msg)
		return m.Sum(nil)
	}
	tests := []struct {
		name      string
		signature string
		want      []sigcheck.Category
		summary   string // a part of the first cause's summary
	}{
		{"keys sorted, as Go's map re-marshal", hmacB64([]byte(tok), reencode(t, b, json.Marshal)), []sigcheck.Category{sigcheck.Reserialised}, "keys sorted"},
		{"pretty-printed", hmacB64([]byte(tok), reencode(t, b, func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") })),
			[]sigcheck.Category{sigcheck.Reserialised}, "indented by 2 spaces, keys sorted"},
		{"ASCII-escaped, as Python's json.dumps", hmacB64([]byte(tok), pythonDumps(t, b)), []sigcheck.Category{sigcheck.Reserialised}, "Python's json.dumps"},
		{"re-encoded as Latin-1", hmacB64([]byte(tok), latin1(b)), []sigcheck.Category{sigcheck.Encoding}, "Latin-1"},
		{"UTF-8 read as Latin-1", hmacB64([]byte(tok), mojibake(b)), []sigcheck.Category{sigcheck.Encoding}, "encoded twice"},
		{"a trailing newline added", hmacB64([]byte(tok), append(bytes.Clone(b), '\n')), []sigcheck.Category{sigcheck.Whitespace}, "line break added"},
		{"signed with the previous token", hmacB64([]byte(prev), b), []sigcheck.Category{sigcheck.WrongToken}, "previous token"},
		{"signed with a rotation's next token", hmacB64([]byte(next), b), []sigcheck.Category{sigcheck.WrongToken}, "rotation moves to"},
		{"the token read with its newline", hmacB64([]byte(tok+"\n"), b), []sigcheck.Category{sigcheck.WrongToken}, "line break"},
		{"the token without its prefix", hmacB64([]byte(raw), b), []sigcheck.Category{sigcheck.WrongToken}, "without its whsec_ prefix"},
		{"the token Base64-decoded", hmacB64(decoded, b), []sigcheck.Category{sigcheck.WrongToken}, "Base64-decodes the token"},
		{"hex, not Base64", hex.EncodeToString(mac(b)), []sigcheck.Category{sigcheck.Format}, "hexadecimal"},
		{"with a sha256= prefix", "sha256=" + base64.StdEncoding.EncodeToString(mac(b)), []sigcheck.Category{sigcheck.Format}, "sha256= prefix"},
		// Without + or / in it, URL-safe Base64 reads as standard Base64
		// that lost its padding, and is named so.
		{"URL-safe Base64 without padding", base64.RawURLEncoding.EncodeToString(mac(b)), []sigcheck.Category{sigcheck.Format},
			map[bool]string{true: "URL-safe", false: "padding"}[strings.ContainsAny(base64.RawURLEncoding.EncodeToString(mac(b)), "-_")]},
		{"HMAC-SHA1", func() string {
			m := hmac.New(sha1.New, []byte(tok))
			m.Write(b)
			return base64.StdEncoding.EncodeToString(m.Sum(nil))
		}(), []sigcheck.Category{sigcheck.Algorithm}, "HMAC-SHA1"},
		{"sorted keys and the previous token", hmacB64([]byte(prev), reencode(t, b, json.Marshal)),
			[]sigcheck.Category{sigcheck.Reserialised, sigcheck.WrongToken}, "previous token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sigcheck.Check(sigcheck.Input{Body: b, Signature: tc.signature, Token: tok, Previous: []string{prev}, Next: next})
			if r.Signature != webhook.Sign(tok, b) {
				t.Errorf("signature %q; want herald's %q", r.Signature, webhook.Sign(tok, b))
			}
			if !r.Checked || r.Match {
				t.Fatalf("checked %v, match %v; want a checked mismatch", r.Checked, r.Match)
			}
			if len(r.Causes) == 0 {
				t.Fatalf("no cause found; want %v", tc.want)
			}
			if got := r.Causes[0].Categories; !slices.Equal(got, tc.want) {
				t.Errorf("first cause %v (%s); want %v", got, r.Causes[0].Summary, tc.want)
			}
			if !strings.Contains(r.Causes[0].Summary, tc.summary) {
				t.Errorf("first cause reads %q; want it to contain %q", r.Causes[0].Summary, tc.summary)
			}
			if r.Causes[0].Fix == "" {
				t.Errorf("the cause says nothing about how to fix it")
			}
			if strings.Contains(r.Causes[0].Summary+r.Causes[0].Fix, tok) || strings.Contains(r.Causes[0].Summary, raw) {
				t.Errorf("a cause shows the token")
			}
		})
	}
}

// TestJavaScriptReserialisation: JSON.stringify(JSON.parse(body))
// reproduces herald's bytes for most bodies, but moves integer-like keys
// first and rewrites numbers such as 1.50; the debugger names it.
func TestJavaScriptReserialisation(t *testing.T) {
	t.Parallel()
	tok := auth.NewWebhookToken()
	b := []byte(`{"id":"e1","event":"license.created","data":{"metadata":{"10":"a","2":"b","price":1.50,"tiny":0.0000001}},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
	js := []byte(`{"id":"e1","event":"license.created","data":{"metadata":{"2":"b","10":"a","price":1.5,"tiny":1e-7}},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
	r := sigcheck.Check(sigcheck.Input{Body: b, Signature: hmacB64([]byte(tok), js), Token: tok})
	if len(r.Causes) == 0 || !strings.Contains(r.Causes[0].Summary, "JSON.stringify") {
		t.Errorf("causes %+v; want JavaScript's re-serialisation named", r.Causes)
	}
}

// TestMatchAndUnknown: the right signature matches with no cause, and one
// nothing explains matches nothing and names no cause.
func TestMatchAndUnknown(t *testing.T) {
	t.Parallel()
	tok := auth.NewWebhookToken()
	b := body(t)
	for _, tc := range []struct {
		name      string
		signature string
		match     bool
		checked   bool
	}{
		{"the right signature", webhook.Sign(tok, b), true, true},
		{"the right signature with spaces around it", "  " + webhook.Sign(tok, b) + "\n", true, true},
		{"another token's signature", webhook.Sign(auth.NewWebhookToken(), b), false, true},
		{"not a signature at all", "hello", false, true},
		{"no signature given", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sigcheck.Check(sigcheck.Input{Body: b, Signature: tc.signature, Token: tok})
			if r.Match != tc.match || r.Checked != tc.checked || len(r.Causes) != 0 {
				t.Errorf("match %v, checked %v, causes %v; want match %v, checked %v, no cause", r.Match, r.Checked, r.Causes, tc.match, tc.checked)
			}
			if len(r.Notes) != 0 {
				t.Errorf("herald's own body has notes: %v", r.Notes)
			}
		})
	}
}

// TestNotes: what a pasted body shows by itself.
func TestNotes(t *testing.T) {
	t.Parallel()
	b := body(t)
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"pretty-printed", reencode(t, b, func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }), "compact"},
		{"ASCII-escaped", pythonDumps(t, b), `\uXXXX`},
		{"Latin-1", latin1(b), "not valid UTF-8"},
		{"encoded twice", mojibakeLatin(t), "encoded twice"},
		{"trailing newline", append(bytes.Clone(b), '\n'), "whitespace"},
		{"keys reordered", reencode(t, b, json.Marshal), "another order"},
		{"cut short", b[:len(b)/2], "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sigcheck.Check(sigcheck.Input{Body: tc.body, Token: "whsec_x"})
			var all []string
			for _, n := range r.Notes {
				all = append(all, n.Text)
			}
			if !strings.Contains(strings.Join(all, " | "), tc.want) {
				t.Errorf("notes %q; want one containing %q", all, tc.want)
			}
		})
	}
}

// pythonDumps writes b as Python's json.dumps does by default: ", " and
// ": " separators, non-ASCII as lowercase \uXXXX, keys in their order.
func pythonDumps(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var write func()
	write = func() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteRune(rune(v))
			closing := map[json.Delim]byte{'{': '}', '[': ']'}[v]
			first := true
			for dec.More() {
				if !first {
					out.WriteString(", ")
				}
				first = false
				if v == '{' {
					k, _ := dec.Token()
					writeString(&out, k.(string))
					out.WriteString(": ")
				}
				write()
			}
			dec.Token()
			out.WriteByte(closing)
		case string:
			writeString(&out, v)
		case json.Number:
			out.WriteString(string(v))
		case bool:
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
	write()
	return out.Bytes()
}

func writeString(out *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // then escape what Python's ensure_ascii escapes
	for _, r := range string(q) {
		switch {
		case r > 0xFFFF:
			r -= 0x10000
			out.WriteString(strings.ToLower(hexRune(0xD800+(r>>10)) + hexRune(0xDC00+(r&0x3FF))))
		case r >= 0x80:
			out.WriteString(hexRune(r))
		default:
			out.WriteRune(r)
		}
	}
}

func hexRune(r rune) string { return `\u` + hex.EncodeToString([]byte{byte(r >> 8), byte(r)}) }

// latin1 is b re-encoded as ISO-8859-1, ? for what it lacks.
func latin1(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		if r > 0xFF {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

// mojibake is b's bytes read as Latin-1 and written as UTF-8.
func mojibake(b []byte) []byte {
	var out []byte
	for _, c := range b {
		out = append(out, string(rune(c))...)
	}
	return out
}

// mojibakeLatin is a body whose every non-ASCII character has a Latin-1
// byte, encoded twice.
func mojibakeLatin(t *testing.T) []byte {
	b, err := event.Build("01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00", event.UserCreated, map[string]any{"name": "Zoë Ångström"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return mojibake(b)
}

// TestSentBody: given what herald sent for the event, the report says
// whether the pasted body is it, where it differs, and whether the
// receiver's signature is the one sent; causes are found from the sent
// bytes when the pasted ones explain nothing.
func TestSentBody(t *testing.T) {
	t.Parallel()
	tok := auth.NewWebhookToken()
	sent := body(t)
	pretty := reencode(t, sent, func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") })
	for _, tc := range []struct {
		name              string
		pasted            []byte
		signature         string
		same, matchesSent bool
		diffAt            int
		cause             sigcheck.Category
	}{
		{"the sent body, signed right", sent, webhook.Sign(tok, sent), true, false, 0, ""},
		{"a reformatted copy, the receiver right", pretty, webhook.Sign(tok, sent), false, true, 1, ""},
		{"a reformatted copy, the receiver trimmed what it was sent", pretty, hmacB64([]byte(tok), append(bytes.Clone(sent), '\n')), false, false, 1, sigcheck.Whitespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sigcheck.Check(sigcheck.Input{Body: tc.pasted, Signature: tc.signature, Token: tok, Sent: sent})
			if !r.Sent || r.SentSame != tc.same || r.MatchesSent != tc.matchesSent || r.SentDiffAt != tc.diffAt {
				t.Errorf("sent %v, same %v, matches sent %v, differs at %d; want same %v, matches sent %v, at %d",
					r.Sent, r.SentSame, r.MatchesSent, r.SentDiffAt, tc.same, tc.matchesSent, tc.diffAt)
			}
			if r.SentSignature != webhook.Sign(tok, sent) {
				t.Errorf("sent signature %q; want herald's over the sent bytes", r.SentSignature)
			}
			var got sigcheck.Category
			if len(r.Causes) > 0 {
				got = r.Causes[0].Categories[0]
			}
			if got != tc.cause {
				t.Errorf("first cause %q; want %q", got, tc.cause)
			}
		})
	}
}
