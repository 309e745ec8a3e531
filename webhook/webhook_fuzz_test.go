package webhook_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/webhook"
)

// FuzzSignVerify checks the signature contract for any token, body and
// header value: Verify accepts exactly the text Sign returns and refuses
// every other string, without panicking.
func FuzzSignVerify(f *testing.F) {
	sig := webhook.Sign(token, body)
	for _, s := range []struct {
		token, body, other string
	}{
		{token, string(body), sig},
		{token, string(body), ""},
		{token, string(body), sig[:len(sig)-1]},           // padding cut
		{token, string(body), sig[:len(sig)-2] + "V="},    // non-canonical low bits
		{token, string(body), " " + sig},                  // leading space
		{token, string(body), sig + "\n"},                 // trailing newline
		{token, string(body), strings.ToLower(sig)},       // another casing
		{token, string(body), "sha256=" + sig},            // a scheme prefix
		{token, string(body), strings.Repeat("A", 44)},    // the right length, all zero
		{token, string(body), strings.Repeat("A", 1<<12)}, // long
		{"", "", "thNnmggU2ex3L5XXeMNfxf8Wl8STcVZTxscSFEKSxa0="},
		{"whsec_Zoë", "{\"k\":\"\u2028\"}", "\x00"},
		{"\xff\xfe", "\xff", "====\x00"},
		{strings.Repeat("k", 200), strings.Repeat("\x00", 100), "-_-_"}, // base64url alphabet
	} {
		f.Add(s.token, []byte(s.body), s.other)
	}
	f.Fuzz(func(t *testing.T, token string, body []byte, other string) {
		sig := webhook.Sign(token, body)
		if err := webhook.Verify(token, body, sig); err != nil {
			t.Fatalf("Verify(Sign(token, body)) = %v; want nil", err)
		}
		err := webhook.Verify(token, body, other)
		if other == sig {
			if err != nil {
				t.Fatalf("Verify with Sign's own output = %v; want nil", err)
			}
			return
		}
		if err == nil {
			t.Fatalf("Verify accepted %q, which is not Sign's %q", other, sig)
		}
		// The same through the middleware: a request carrying the other
		// string as its header must not reach the handler.
		req := httptest.NewRequest(http.MethodPost, "http://receiver.example/", bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, other)
		reached := false
		rec := httptest.NewRecorder()
		webhook.Middleware(token, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(rec, req)
		if reached {
			t.Fatalf("the middleware passed a request signed %q; Sign gives %q", other, sig)
		}
	})
}

// FuzzParse checks that Parse never panics, and that what it accepts has the
// id and event a receiver routes and de-duplicates on.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		string(body),
		`{"id":"e","event":"license.created","data":{"key":"Zoë"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`,
		`{"id":"e","event":"x","data":null,"triggeredAt":"not a time"}`,
		`{"id":"","event":"x"}`, `{"id":"e"}`, `{"id":1,"event":"x"}`, `{"id":"e","event":"x","id":""}`,
		`{}`, `[]`, `null`, ``, `{"id":"e","event":"x"} trailing`, "{\"id\":\"\xff\",\"event\":\"\x00\"}",
		`{"id":"e","event":"x","data":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
		`{"id":"e","event":"x","data":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		`{"id":"e","event":"x","data":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"id":"e","event":"x","data":{"s":"` + strings.Repeat(`[{"`, 100) + `"}}`,
		`{"id":"e","event":"x","data":{` + strings.Repeat(`"k":0,`, 1000) + `"k":0}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := webhook.Parse(b)
		if err == nil && (p.ID == "" || p.Event == "") {
			t.Fatalf("Parse accepted %q with id %q and event %q", b, p.ID, p.Event)
		}
	})
}
