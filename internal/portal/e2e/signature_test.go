package e2e_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/webhook"
)

// signedWebhook creates a webhook with a known token.
func signedWebhook(t *testing.T, h *heraldtest.Herald) (id, token string) {
	t.Helper()
	token = auth.NewWebhookToken()
	var w struct{ ID string }
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "CRM", "url": "https://crm.example.com/in",
		"events": []string{"license.created"}, "token": token}, &w)
	return w.ID, token
}

// sampleBody is a real herald body, with accents, CJK and an emoji.
func sampleBody(t *testing.T) []byte {
	t.Helper()
	now := time.Date(2026, 11, 21, 8, 7, 13, 120e6, time.UTC)
	b, err := event.Build("01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00", event.LicenseCreated, event.Sample(event.LicenseCreated, now), now)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(key string, msg []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(msg)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

var (
	verdictAttr = regexp.MustCompile(`data-verdict="([^"]+)"`)
	causeAttr   = regexp.MustCompile(`data-cause="([^"]+)"`)
	heraldSig   = regexp.MustCompile(`id="check-signature">([^<]+)<`)
	bytesShown  = regexp.MustCompile(`id="check-bytes">([^<]+)<`)
)

func firstMatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// TestSignatureCheckVerdicts: through the portal's form, posted as a
// browser posts it (every line break of the text box as CRLF), each
// receiver mistake is named, the right signature matches, and herald's
// signature is over exactly the bytes meant; the token never appears.
func TestSignatureCheckVerdicts(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	id, tok := signedWebhook(t, h)
	b := mustSignIn(t, h)
	body := sampleBody(t)
	sorted := func() []byte {
		var v any
		json.Unmarshal(body, &v)
		out, _ := json.Marshal(v)
		return out
	}()
	// A body with non-ASCII characters and LF line breaks, as a receiver
	// that logs pretty-printed JSON has it.
	lines := []byte("{\n  \"name\": \"Zoë 🚀\",\n  \"city\": \"Zürich\"\n}")
	crlf := bytes.ReplaceAll(lines, []byte("\n"), []byte("\r\n"))
	latin1 := []byte("{\"name\":\"Zo\xeb\"}") // not UTF-8: only Base64 carries it
	mac := hmac.New(sha256.New, []byte(tok))
	mac.Write(body)

	tests := []struct {
		name        string
		pasted      string // the form's body field, as the browser sends it
		encoding    string
		lineEndings string
		signature   string
		verdict     string
		cause       string // the first data-cause
		checked     []byte // the bytes herald's signature must be over
	}{
		{"the right signature", string(body), "", "", webhook.Sign(tok, body), "match", "", body},
		{"no signature: herald's only", string(body), "", "", "", "computed", "", body},
		{"LF lines with non-ASCII, read as LF", string(crlf), "text", "lf", sign(tok, lines), "match", "", lines},
		{"LF lines with non-ASCII, read as CRLF", string(crlf), "text", "crlf", sign(tok, crlf), "match", "", crlf},
		{"CRLF chosen, the receiver had LF", string(crlf), "text", "crlf", sign(tok, lines), "mismatch", "whitespace", crlf},
		{"bytes that are not UTF-8, as Base64", base64.StdEncoding.EncodeToString(latin1), "base64", "", sign(tok, latin1), "match", "", latin1},
		{"re-serialised JSON", string(body), "", "", sign(tok, sorted), "mismatch", "reserialised", body},
		{"changed encoding", string(body), "", "", sign(tok, latin1Of(body)), "mismatch", "encoding", body},
		{"trimmed whitespace", string(body) + "\r\n", "text", "lf", sign(tok, body), "mismatch", "whitespace", append(bytes.Clone(body), '\n')},
		{"a wrong token: read with its newline", string(body), "", "", sign(tok+"\n", body), "mismatch", "token", body},
		{"a wrong token: decoded", string(body), "", "", sign(string(mustDecode(t, tok)), body), "mismatch", "token", body},
		{"hex instead of Base64", string(body), "", "", hex.EncodeToString(mac.Sum(nil)), "mismatch", "format", body},
		{"another token altogether", string(body), "", "", sign(auth.NewWebhookToken(), body), "unknown", "", body},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"body": {tc.pasted}, "signature": {tc.signature}}
			if tc.encoding != "" {
				form.Set("encoding", tc.encoding)
			}
			if tc.lineEndings != "" {
				form.Set("lineEndings", tc.lineEndings)
			}
			code, _, page := b.post("/webhooks/"+id+"/signature", form)
			if code != http.StatusOK {
				t.Fatalf("%d; want 200\n%s", code, page)
			}
			if got := firstMatch(verdictAttr, page); got != tc.verdict {
				t.Errorf("verdict %q; want %q", got, tc.verdict)
			}
			if got := firstMatch(causeAttr, page); got != tc.cause {
				t.Errorf("first cause %q; want %q", got, tc.cause)
			}
			if got, want := firstMatch(heraldSig, page), webhook.Sign(tok, tc.checked); got != want {
				t.Errorf("herald's signature %q; want %q, over the %d bytes meant", got, want, len(tc.checked))
			}
			if got := firstMatch(bytesShown, page); got != thousands(len(tc.checked)) {
				t.Errorf("bytes checked %q; want %d", got, len(tc.checked))
			}
			if strings.Contains(html.UnescapeString(page), tok) || strings.Contains(html.UnescapeString(page), strings.TrimPrefix(tok, "whsec_")) {
				t.Errorf("the page shows the token")
			}
		})
	}
}

func latin1Of(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		if r > 0xFF {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

func mustDecode(t *testing.T, tok string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(tok, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// thousands writes n as the portal does: 50,000.
func thousands(n int) string {
	d := strconv.Itoa(n)
	var out []byte
	for i := range len(d) {
		if i > 0 && (len(d)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, d[i])
	}
	return string(out)
}

// TestSignatureCheckRefusesBadInput: each bad field answers 422 naming it,
// with what was typed kept and nothing computed; another account's
// webhook is not found, a form without its CSRF token is refused.
func TestSignatureCheckRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	id, _ := signedWebhook(t, h)
	b := mustSignIn(t, h)
	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
		want  string
	}{
		{"empty body", url.Values{"body": {""}}, "body", "Body must not be empty"},
		{"not Base64", url.Values{"body": {"{not base64}"}, "encoding": {"base64"}}, "body", "not valid Base64"},
		{"unknown encoding", url.Values{"body": {"{}"}, "encoding": {"utf-16"}}, "encoding", "Body format must be"},
		{"unknown line endings", url.Values{"body": {"{}"}, "lineEndings": {"cr"}}, "lineEndings", "Line endings must be"},
		{"signature too long", url.Values{"body": {"{}"}, "signature": {strings.Repeat("A", 513)}}, "signature", "at most 512"},
		{"signature with a control character", url.Values{"body": {"{}"}, "signature": {"abc\x01def"}}, "signature", "control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, page := b.post("/webhooks/"+id+"/signature", tc.form)
			if code != http.StatusUnprocessableEntity {
				t.Fatalf("%d; want 422", code)
			}
			if !strings.Contains(page, `id="`+tc.field+`-error"`) || !strings.Contains(page, tc.want) {
				t.Errorf("no error %q beside %s:\n%s", tc.want, tc.field, page)
			}
			if strings.Contains(page, "data-verdict") {
				t.Errorf("a refused form shows a result")
			}
		})
	}
	// What was typed stays, a leading line break included (an HTML parser
	// drops the first one after <textarea>).
	_, _, page := b.post("/webhooks/"+id+"/signature", url.Values{"body": {"\r\n{x"}, "encoding": {"base64"}, "signature": {"sig"}})
	if !strings.Contains(page, "<textarea") || !strings.Contains(page, ">\n\r\n{x</textarea>") || !strings.Contains(page, `value="sig"`) {
		t.Errorf("the refused form lost what was typed:\n%s", page)
	}

	// Bodies beyond the other forms' 64 KiB are read; beyond 512 KiB, 413.
	big := `{"id":"x","data":"` + strings.Repeat("é", 40<<10) + `"}` // 80 KiB, 240 KiB percent-encoded
	if code, _, page := b.post("/webhooks/"+id+"/signature", url.Values{"body": {big}}); code != http.StatusOK || firstMatch(bytesShown, page) != thousands(len(big)) {
		t.Errorf("an 80 KiB body: %d, %s bytes checked; want 200 and %d", code, firstMatch(bytesShown, page), len(big))
	}
	if code, _, _ := b.post("/webhooks/"+id+"/signature", url.Values{"body": {strings.Repeat("x", 600<<10)}}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 600 KiB form: %d; want 413", code)
	}
	b.get("/webhooks/" + id + "/signature") // a 413 page carries no form token

	if code, _, _ := b.do("POST", "/webhooks/"+id+"/signature", url.Values{"body": {"{}"}}); code != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d; want 403", code)
	}

	hash, _ := auth.HashPassword("other password")
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{AccountName: "B", OwnerEmail: "b@example.com",
		PasswordHash: hash, TokenHash: auth.HashToken(auth.NewAPIToken())}); err != nil {
		t.Fatal(err)
	}
	other := newBrowser(t, h)
	if code, _, _ := other.signIn("b@example.com", "other password"); code != http.StatusSeeOther {
		t.Fatalf("sign in as B: %d", code)
	}
	other.get("/webhooks") // for its CSRF token
	if code, _, _ := other.get("/webhooks/" + id + "/signature"); code != http.StatusNotFound {
		t.Errorf("B: GET A's signature page = %d; want 404", code)
	}
	if code, _, page := other.post("/webhooks/"+id+"/signature", url.Values{"body": {"{}"}}); code != http.StatusNotFound || strings.Contains(page, "check-signature") {
		t.Errorf("B: POST A's signature check = %d; want 404 and no signature", code)
	}
}

// TestSignatureCheckIsRateLimited: a check counts against the session's
// request rate, like a Test; over it, 429 with Retry-After and nothing
// computed.
func TestSignatureCheckIsRateLimited(t *testing.T) {
	t.Parallel()
	// Two requests per 200 s per session (and per API token): the list
	// after sign-in and the debugger's page use the session's.
	h := heraldtest.Start(t, heraldtest.Options{RateLimit: 0.01})
	id, tok := signedWebhook(t, h)
	b := mustSignIn(t, h)
	if code, _, _ := b.get("/webhooks/" + id + "/signature"); code != http.StatusOK {
		t.Fatalf("the page, within the limit: %d", code)
	}
	form := url.Values{"body": {"{}"}, "signature": {sign(tok, []byte("{}"))}, "csrf": {b.csrf}}
	resp, err := b.c.PostForm(h.URL+"/webhooks/"+id+"/signature", form)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || strings.Contains(string(page), "check-signature") {
		t.Errorf("over the limit: %d; want 429 and no signature", resp.StatusCode)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
}

// TestSignatureCheckKnowsWhatWasSent: a pasted body naming an event this
// webhook was sent is compared with the bytes herald sent; a log's page
// leads to the debugger with its exact payload; another webhook's log is
// not found there.
func TestSignatureCheckKnowsWhatWasSent(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	tok := auth.NewWebhookToken()
	var hook struct{ ID string }
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "CRM", "url": rcv.URL, "events": []string{"license.created"}, "token": tok}, &hook)
	other := h.CreateWebhook("Other", rcv.URL, "license.created")
	h.CreateLicense(map[string]any{"customer": "Zoë 🚀"})
	heraldtest.Eventually(t, 10e9, "both deliveries", func() bool { return rcv.Count() == 2 && len(h.Logs("status=succeeded")) == 2 })
	var mine, theirs heraldtest.Log
	for _, l := range h.Logs("") {
		if l.WebhookID == hook.ID {
			mine = l
		} else {
			theirs = l
		}
	}
	sent := []byte(mine.Payload)
	var got []byte
	for _, req := range rcv.Requests() {
		if req.Header.Get(webhook.SignatureHeader) == webhook.Sign(tok, req.Body) {
			got = req.Body
		}
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("the receiver got %q; the log holds %q", got, sent)
	}
	b := mustSignIn(t, h)

	// From the log's page, the payload comes prefilled.
	_, _, logPage := b.get("/webhook-event-logs/" + mine.ID)
	link := "/webhooks/" + hook.ID + "/signature?log=" + mine.ID
	if !strings.Contains(logPage, `href="`+link+`"`) {
		t.Fatalf("the log page does not link to the debugger with its payload")
	}
	_, _, page := b.get(link)
	if !strings.Contains(page, ">\n"+html.EscapeString(string(sent))+"</textarea>") {
		t.Errorf("the debugger is not prefilled with the payload")
	}
	if code, _, _ := b.get("/webhooks/" + hook.ID + "/signature?log=" + theirs.ID); code != http.StatusNotFound {
		t.Errorf("another webhook's log in this webhook's debugger: %d; want 404", code)
	}

	var v any
	json.Unmarshal(sent, &v)
	pretty, _ := json.MarshalIndent(v, "", "  ")
	for _, tc := range []struct {
		name, pasted, signature, verdict, sentFact string
	}{
		{"the sent bytes", string(sent), webhook.Sign(tok, sent), "match", "exactly these bytes"},
		{"a formatted copy, the receiver right", string(pretty), webhook.Sign(tok, sent), "sent", "differ from byte 1"},
		{"a formatted copy the receiver hashed", string(pretty), webhook.Sign(tok, pretty), "match-changed", "differ from byte 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, page := b.post("/webhooks/"+hook.ID+"/signature", url.Values{"body": {tc.pasted}, "signature": {tc.signature}})
			if code != http.StatusOK {
				t.Fatalf("%d", code)
			}
			if got := firstMatch(verdictAttr, page); got != tc.verdict {
				t.Errorf("verdict %q; want %q", got, tc.verdict)
			}
			if !strings.Contains(page, `href="/webhook-event-logs/`+mine.ID+`" id="check-sent-log"`) || !strings.Contains(page, tc.sentFact) {
				t.Errorf("the result does not name the sent event's log and %q", tc.sentFact)
			}
		})
	}
	// A body naming no event of this webhook, or no event at all, is
	// checked without one.
	for _, id := range []string{"01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00", "not-a-uuid", "' OR 1=1 --"} {
		body := strings.Replace(string(sent), mine.EventID, id, 1)
		code, _, page := b.post("/webhooks/"+other.ID+"/signature", url.Values{"body": {body}})
		if code != http.StatusOK || strings.Contains(page, "check-sent-log") {
			t.Errorf("id %q: %d, and the result names a sent event", id, code)
		}
	}
	// The event's id written in capitals still names it; the bytes differ.
	body := strings.Replace(string(sent), mine.EventID, strings.ToUpper(mine.EventID), 1)
	at := len(`{"id":"`) + strings.IndexFunc(mine.EventID, func(r rune) bool { return r >= 'a' && r <= 'f' })
	if _, _, page := b.post("/webhooks/"+hook.ID+"/signature", url.Values{"body": {body}}); !strings.Contains(page, "check-sent-log") || !strings.Contains(page, fmt.Sprintf("differ from byte %d,", at)) {
		t.Errorf("the event's id in capitals is not recognised, or the difference not placed at byte %d", at)
	}
}

// TestSignatureCheckDuringARotation: while a token rotation runs, the
// check signs with the current token, and a receiver already on the next
// token is told so.
func TestSignatureCheckDuringARotation(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	id, tok := signedWebhook(t, h)
	h.Must(200, "POST", "/v3/webhooks/"+id+"/token/rotate", map[string]any{}, nil)
	var tokens struct {
		Token     string
		NextToken *string
	}
	h.Must(200, "GET", "/v3/webhooks/"+id+"/token", nil, &tokens)
	if tokens.Token != tok || tokens.NextToken == nil {
		t.Fatalf("tokens %+v; want the rotation under way", tokens)
	}
	b := mustSignIn(t, h)
	body := sampleBody(t)
	code, _, page := b.post("/webhooks/"+id+"/signature", url.Values{"body": {string(body)}, "signature": {sign(*tokens.NextToken, body)}})
	if code != http.StatusOK || firstMatch(verdictAttr, page) != "mismatch" || firstMatch(causeAttr, page) != "token" || !strings.Contains(page, "rotation moves to") {
		t.Errorf("%d, verdict %q, cause %q; want the next token named", code, firstMatch(verdictAttr, page), firstMatch(causeAttr, page))
	}
	if got := firstMatch(heraldSig, page); got != webhook.Sign(tok, body) {
		t.Errorf("herald's signature %q; want the current token's", got)
	}
	if strings.Contains(html.UnescapeString(page), *tokens.NextToken) {
		t.Errorf("the page shows the next token")
	}
}

// TestSignatureCheckStandardWebhooksFields: for a webhook signing the
// Standard Webhooks way, the check opened from an event log comes with the
// log's body and the webhook-id and webhook-timestamp its latest attempt
// was signed with, so checking it as is matches what was sent; the form
// refuses an empty or malformed webhook-timestamp beside the field and
// checks nothing. A webhook in herald's scheme asks for neither.
func TestSignatureCheckStandardWebhooksFields(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	token := auth.NewWebhookToken()
	var hook struct{ ID string }
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "SW", "url": rcv.URL, "events": []string{"license.created"},
		"token": token, "signatureScheme": "standard-webhooks"}, &hook)
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	sent := rcv.Requests()[0]
	var logs []heraldtest.Log
	heraldtest.Eventually(t, 30*time.Second, "the log succeeded", func() bool {
		logs = h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "succeeded"
	})
	b := mustSignIn(t, h)

	_, _, page := b.get("/webhooks/" + hook.ID + "/signature?log=" + logs[0].ID)
	value := func(id string) string {
		return firstMatch(regexp.MustCompile(`id="`+id+`"[^>]*value="([^"]*)"`), page)
	}
	if got, want := value("webhookId"), sent.Header.Get("webhook-id"); got != want {
		t.Errorf("webhook-id prefilled %q; want %q", got, want)
	}
	if got, want := value("timestamp"), sent.Header.Get("webhook-timestamp"); got != want {
		t.Errorf("webhook-timestamp prefilled %q; want %q", got, want)
	}
	code, _, page := b.post("/webhooks/"+hook.ID+"/signature", url.Values{"body": {string(sent.Body)}, "webhookId": {value("webhookId")},
		"timestamp": {value("timestamp")}, "signature": {sent.Header.Get("webhook-signature")}})
	if code != http.StatusOK || firstMatch(verdictAttr, page) != "match" || firstMatch(heraldSig, page) != sent.Header.Get("webhook-signature") {
		t.Errorf("the prefilled check: %d, verdict %q, herald's signature %q; want a match with %q", code, firstMatch(verdictAttr, page),
			firstMatch(heraldSig, page), sent.Header.Get("webhook-signature"))
	}

	for _, tc := range []struct{ timestamp, want string }{
		{"", "webhook-timestamp must not be empty"},
		{"17950000.5", "whole number of seconds"},
		{"0017950000", "whole number of seconds"},
	} {
		code, _, page := b.post("/webhooks/"+hook.ID+"/signature", url.Values{"body": {string(sent.Body)}, "timestamp": {tc.timestamp},
			"signature": {sent.Header.Get("webhook-signature")}})
		if code != http.StatusUnprocessableEntity || !strings.Contains(page, `id="timestamp-error"`) || !strings.Contains(page, tc.want) || strings.Contains(page, `id="check-result"`) {
			t.Errorf("timestamp %q: %d; want 422 beside the field saying %q, nothing checked", tc.timestamp, code, tc.want)
		}
	}

	id, _ := signedWebhook(t, h)
	if _, _, page := b.get("/webhooks/" + id + "/signature"); strings.Contains(page, `id="timestamp"`) || strings.Contains(page, `id="webhookId"`) {
		t.Errorf("a webhook in herald's scheme asks for the Standard Webhooks headers")
	}
}

// TestRotationWordsFollowTheScheme: a webhook signing the Standard Webhooks
// way says, during a rotation, that both signatures travel in
// webhook-signature (it sends no webhook-signature-next); one in herald's
// scheme names webhook-signature-next.
func TestRotationWordsFollowTheScheme(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	for _, tc := range []struct{ scheme, want, not string }{
		{"standard-webhooks", "carries two signatures, space-separated", "webhook-signature-next"},
		{"herald", "<code>webhook-signature-next</code> under the next token", "space-separated"},
	} {
		var hook struct{ ID string }
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": tc.scheme, "url": "https://example.com/in", "events": []string{"license.created"},
			"signatureScheme": tc.scheme}, &hook)
		h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/token/rotate", map[string]any{}, nil)
		_, _, page := b.get("/webhooks/" + hook.ID)
		state := page[strings.Index(page, `id="rotation-state"`):]
		state = state[:strings.Index(state, "</dd>")]
		if !strings.Contains(state, tc.want) || strings.Contains(state, tc.not) {
			t.Errorf("%s: the rotation reads %q; want %q and not %q", tc.scheme, state, tc.want, tc.not)
		}
	}
}

// TestSignatureCheckEd25519: Check a signature on an ed25519 webhook says
// so, and a real delivery's v1a signature, checked with its headers as
// sent, matches the one herald makes again from its key (ed25519 is
// deterministic); with a changed body it does not.
func TestSignatureCheckEd25519(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	var hook struct{ ID string }
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "Ed", "url": rcv.URL, "events": []string{"license.created"},
		"signatureScheme": "standard-webhooks-ed25519"}, &hook)
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	sent := rcv.Requests()[0]
	sig := sent.Header.Get("webhook-signature")
	if !strings.HasPrefix(sig, "v1a,") {
		t.Fatalf("webhook-signature %q; want v1a", sig)
	}
	b := mustSignIn(t, h)
	if _, _, page := b.get("/webhooks/" + hook.ID + "/signature"); !strings.Contains(page, "with ed25519") {
		t.Errorf("the page does not say the webhook signs with ed25519")
	}
	form := url.Values{"body": {string(sent.Body)}, "webhookId": {sent.Header.Get("webhook-id")},
		"timestamp": {sent.Header.Get("webhook-timestamp")}, "signature": {sig}}
	code, _, page := b.post("/webhooks/"+hook.ID+"/signature", form)
	if code != http.StatusOK || firstMatch(verdictAttr, page) != "match" || firstMatch(heraldSig, page) != sig {
		t.Errorf("the delivery as sent: %d, verdict %q, herald's signature %q; want a match with %q", code, firstMatch(verdictAttr, page), firstMatch(heraldSig, page), sig)
	}
	form.Set("body", strings.Replace(string(sent.Body), `"license.created"`, `"license.deleted"`, 1))
	if _, _, page := b.post("/webhooks/"+hook.ID+"/signature", form); firstMatch(verdictAttr, page) == "match" {
		t.Errorf("a changed body matched")
	}
}
