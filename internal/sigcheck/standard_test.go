package sigcheck_test

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/sigcheck"
	"github.com/heraldhq/herald/webhook"
)

// TestStandardWebhooks: for a webhook signing the Standard Webhooks way,
// the check computes the signature the official library computes, accepts
// the library's own signature (alone or beside a rotation's second one),
// and traces each way a receiver or a request goes wrong to its cause: a
// tampered body, a changed timestamp, the secret given to the library in
// its raw format, herald's own scheme, the form of the signature.
func TestStandardWebhooks(t *testing.T) {
	t.Parallel()
	// herald's tokens are in the Standard Webhooks form, which the library
	// takes as they are.
	tok, other := auth.NewWebhookToken(), auth.NewWebhookToken()
	b := body(t)
	id := "01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00"
	at := time.Unix(1795000000, 0)
	ts := strconv.FormatInt(at.Unix(), 10)
	libSign := func(secret string, msgID string, when time.Time, payload []byte) string {
		t.Helper()
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(msgID, when, payload)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	official := libSign(tok, id, at, b)
	rawLib, err := standardwebhooks.NewWebhookRaw([]byte(tok)) // the secret's text as the key
	if err != nil {
		t.Fatal(err)
	}
	rawSig, err := rawLib.Sign(id, at, b)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(strings.Replace(string(b), `"event":"license.created"`, `"event":"license.deleted"`, 1))
	if string(tampered) == string(b) {
		t.Fatal("the body has no event to tamper with")
	}
	bare := strings.TrimPrefix(official, "v1,")
	raw, _ := base64.StdEncoding.DecodeString(bare)

	tests := []struct {
		name      string
		token     string // "": tok
		body      []byte
		signature string
		std       sigcheck.Standard
		sent      []byte
		match     bool
		matchSent bool
		want      []sigcheck.Category // the first cause's
		summary   string
	}{
		{name: "the official library's signature", body: b, signature: official, std: sigcheck.Standard{ID: id, Timestamp: ts}, match: true},
		{name: "beside a rotation's other signature", body: b, signature: libSign(other, id, at, b) + " " + official,
			std: sigcheck.Standard{ID: id, Timestamp: ts}, match: true},
		{name: "a tampered body, the event known", body: tampered, signature: official, std: sigcheck.Standard{ID: id, Timestamp: ts}, sent: b, matchSent: true},
		{name: "a tampered body", body: tampered, signature: official, std: sigcheck.Standard{ID: id, Timestamp: ts}},
		{name: "a changed timestamp", body: b, signature: official, std: sigcheck.Standard{ID: id, Timestamp: "1795000090", SentTimestamps: []string{ts}},
			want: []sigcheck.Category{sigcheck.Header}, summary: "made with webhook-timestamp 1795000000, which herald sent with attempt 1"},
		{name: "another webhook-id than the body's", body: b, signature: official, std: sigcheck.Standard{ID: "msg_other", Timestamp: ts},
			want: []sigcheck.Category{sigcheck.Header}, summary: "the body's own id"},
		{name: "the secret given to the library in its raw format", body: b, signature: rawSig, std: sigcheck.Standard{ID: id, Timestamp: ts},
			want: []sigcheck.Category{sigcheck.WrongToken}, summary: "signs with the secret's text as the key"},
		{name: "herald's own scheme", body: b, signature: webhook.Sign(tok, b), std: sigcheck.Standard{ID: id, Timestamp: ts},
			want: []sigcheck.Category{sigcheck.Scheme}, summary: "herald's own signature"},
		{name: "without v1,", body: b, signature: bare, std: sigcheck.Standard{ID: id, Timestamp: ts},
			want: []sigcheck.Category{sigcheck.Format}, summary: "lacks the v1,"},
		{name: "hex", body: b, signature: "v1," + hex.EncodeToString(raw), std: sigcheck.Standard{ID: id, Timestamp: ts},
			want: []sigcheck.Category{sigcheck.Format}, summary: "hexadecimal"},
		{name: "another token", body: b, signature: libSign(other, id, at, b), std: sigcheck.Standard{ID: id, Timestamp: ts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			std, token := tt.std, cmp.Or(tt.token, tok)
			r := sigcheck.Check(sigcheck.Input{Body: tt.body, Signature: tt.signature, Token: token, Sent: tt.sent, Standard: &std})
			if want := libSign(token, std.ID, time.Unix(mustInt(t, std.Timestamp), 0), tt.body); r.Signature != want || !r.Standard {
				t.Errorf("herald's signature %q (standard %v); want the library's %q", r.Signature, r.Standard, want)
			}
			if r.Match != tt.match || r.MatchesSent != tt.matchSent {
				t.Errorf("match %v, matches sent %v; want %v, %v", r.Match, r.MatchesSent, tt.match, tt.matchSent)
			}
			if tt.want == nil {
				if len(r.Causes) != 0 {
					t.Errorf("causes %+v; want none", r.Causes)
				}
				return
			}
			if len(r.Causes) == 0 {
				t.Fatalf("no cause; want %v", tt.want)
			}
			if c := r.Causes[0]; !slices.Equal(c.Categories, tt.want) || !strings.Contains(c.Summary, tt.summary) {
				t.Errorf("first cause %v %q; want %v containing %q", c.Categories, c.Summary, tt.want, tt.summary)
			}
		})
	}
}

// TestStandardTimestampNotes: a timestamp a receiver refuses whatever the
// signature is named, and one it accepts is not.
func TestStandardTimestampNotes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1795000000, 0)
	tests := []struct {
		ts   string
		want string // "" for no note
	}{
		{"1795000000", ""},
		{"1794999800", ""},
		{"1794999000", "16 minutes old"},
		{"1795003600", "in the future"},
		{"1795000000000", "milliseconds"},
		{"soon", "not a whole number"},
	}
	for _, tt := range tests {
		r := sigcheck.Check(sigcheck.Input{Body: []byte(`{}`), Token: "whsec_x", Standard: &sigcheck.Standard{ID: "a", Timestamp: tt.ts, Now: now}})
		var got []string
		for _, n := range r.Notes {
			if n.Category == sigcheck.Header {
				got = append(got, n.Text)
			}
		}
		if tt.want == "" && len(got) != 0 || tt.want != "" && !strings.Contains(strings.Join(got, " "), tt.want) {
			t.Errorf("timestamp %s: notes %q; want %q", tt.ts, got, tt.want)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStandardWebhooksRotation: during a token rotation herald's header
// carries the current and the next token's signatures; a receiver already
// on the next token verifies, so its signature is a match.
func TestStandardWebhooksRotation(t *testing.T) {
	t.Parallel()
	tok, next := auth.NewWebhookToken(), auth.NewWebhookToken()
	b := body(t)
	std := sigcheck.Standard{ID: "msg_1", Timestamp: "1795000000"}
	onNext := webhook.SignStandard(next, std.ID, 1795000000, b)
	r := sigcheck.Check(sigcheck.Input{Body: b, Signature: onNext, Token: tok, Next: next, Standard: &std})
	if want := webhook.SignStandard(tok, std.ID, 1795000000, b) + " " + onNext; r.Signature != want {
		t.Errorf("herald's header %q; want both signatures, %q", r.Signature, want)
	}
	if !r.Match || len(r.Causes) != 0 {
		t.Errorf("the next token's signature: match %v, causes %+v; want a match", r.Match, r.Causes)
	}
}
