package portal

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/sigcheck"
	"github.com/heraldhq/herald/internal/store"
)

// TestTemplatesParseAndRender parses every page, as New does at start, and
// renders each with typical data, so a broken template fails here and not
// in front of a user.
func TestTemplatesParseAndRender(t *testing.T) {
	t.Parallel()
	static := mustLoadStatic()
	p, err := parsePages(static)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 8, 7, 13, 0, time.UTC)
	code, errText := 500, "receiver answered 500"
	hook := store.Webhook{ID: "w1", Name: "CRM", URL: "https://example.com/h", Events: kindsOf("license.created", "license.renewed"),
		Enabled: true, Status: store.Unhealthy, CreatedAt: now}
	l := store.EventLog{ID: "l1", WebhookID: "w1", EventID: "e1", Event: "license.created", Status: store.Failed,
		Payload:    []byte(`{"id":"e1","event":"license.created","data":{"key":"Zoë 🎉"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`),
		StatusCode: &code, SentAt: &now, CreatedAt: now,
		Attempts: []store.Attempt{{Number: 1, Trigger: "automatic", SentAt: now, StatusCode: &code, DurationMS: 12, Error: &errText, ResponseBody: "down"}}}
	ok := 200
	data := map[string]any{
		"signin":         signInData{Email: "a@example.com", Errors: fieldErrors{"": "The email address or password is not right."}},
		"error":          errorPage{Code: 404, Status: "Not Found", Message: "gone"},
		"webhooks":       webhooksData{Webhooks: []store.Webhook{hook}, Total: 1200, Matching: 1, Filtered: true, Statuses: healthStates, Pages: pager{Newest: "/webhooks", Newer: "/webhooks?after=x", Older: "/webhooks?cursor=x", Oldest: "/webhooks?oldest=1"}},
		"webhook_form":   webhookFormData{Editing: true, ID: "w1", Form: webhookForm{Name: "CRM"}, Errors: fieldErrors{"url": "URL must use http or https."}},
		"webhook_delete": hook,
		"webhook":        webhookData{Webhook: hook, Token: "whsec_x", Success: newSuccessChart(now.Truncate(time.Hour).Add(-23*time.Hour), []store.HourOfAttempts{{Start: now.Truncate(time.Hour), Attempts: 4, Succeeded: 3}}), Latency: newLatencyChart([]store.AttemptPoint{{SentAt: now, DurationMS: 12, StatusCode: &ok, Succeeded: true}, {SentAt: now, DurationMS: 40}}), Logs: []logRow{{EventLog: l, WebhookName: "CRM"}}},
		"webhook_test":   testData{Webhook: hook, Event: "license.created", Result: &delivery.TestResult{Event: "license.created", Succeeded: true, Response: &delivery.TestResponse{StatusCode: 200, Body: "ok"}, VerificationCheck: &delivery.VerificationCheck{Sent: true, StatusCode: &ok}}},
		"webhook_signature": signatureData{Webhook: hook, Body: "{}", Signature: "x", LineEndings: lineLF, Encoding: bodyText, Bytes: 2,
			Report: &sigcheck.Report{Signature: "abc=", Given: "x", Checked: true, Causes: []sigcheck.Cause{{Categories: []sigcheck.Category{sigcheck.WrongToken}, Summary: "s", Fix: "f"}},
				Notes: []sigcheck.Note{{Category: sigcheck.Whitespace, Text: "n"}}, Sent: true, SentDiffAt: 3, SentSignature: "def="}, SentLog: &l},
		"events":  eventsData{Kinds: catalog.Kinds(), Reach: catalog.Reach()},
		"logs":    logsData{Logs: []logRow{{EventLog: l, WebhookName: "CRM"}}, Filter: logFilter{Webhook: "w1", From: "2026-11-01"}, WebhookName: "CRM", Filtered: true, Count: 10000, More: true, Statuses: logStatuses, Pages: pager{Older: "/webhook-event-logs?cursor=x"}},
		"log":     logData{Log: l, Webhook: hook, Pretty: "{}", Resent: &l.Attempts[0]},
		"account": accountData{Name: "Acme", NotificationEmail: "ops@example.com", OwnerEmail: "a@example.com"},
		"api_tokens": apiTokensData{Tokens: []store.APIToken{{ID: "t1", Name: "CI", Scope: store.ScopeRead, CreatedAt: now, ExpiresAt: &now, LastUsedAt: &now}, {ID: "t2", Name: "First token", Scope: store.ScopeWrite, CreatedAt: now}},
			Next: "/account/api-tokens?cursor=x", Now: now, Lifetimes: tokenLifetimes, Scope: "read", Errors: fieldErrors{"name": "Name must be 1 to 200 characters."},
			Created: &store.APIToken{ID: "t1", Name: "CI", Scope: store.ScopeRead}, Secret: "hrld_x"},
		"password": passwordData{Errors: fieldErrors{"current": "This is not your current password."}},
		"members": membersData{Users: []store.Person{{ID: "u1", Email: "a@example.com", Role: store.RoleOwner, CreatedAt: now}, {ID: "u2", Email: "m@example.com", Role: store.RoleMember, CreatedAt: now}},
			Invitations: []store.Link{{ID: "i1", Email: "n@example.com", Role: store.RoleMember, ExpiresAt: now}}, Me: "u1", IsOwner: true,
			Email: "x", Role: "member", Errors: fieldErrors{"email": "Email address must be an email address."},
			Invited: &store.Link{ID: "i2", Email: "o@example.com", Role: store.RoleOwner}, InviteLink: "https://hooks.example.com/invitation?token=x", Error: "An account keeps at least one owner."},
		"signin_link": linkData{Token: "x", CSRF: "c"},
		"invitation":  linkData{Link: store.Link{Email: "m@example.com", Role: store.RoleMember}, Token: "x", CSRF: "c", Errors: fieldErrors{"password": "Password must be 12 to 1024 characters."}},
	}
	if len(p.byName) != len(data) {
		t.Errorf("%d pages parsed; this test renders %d: keep them in step", len(p.byName), len(data))
	}
	for name, t2 := range p.byName {
		d, ok := data[name]
		if !ok {
			t.Errorf("page %s is not rendered by this test", name)
			continue
		}
		var buf bytes.Buffer
		if err := t2.ExecuteTemplate(&buf, "layout", view{Email: "a@example.com", CSRF: "tok", Data: d}); err != nil {
			t.Errorf("render %s: %v", name, err)
			continue
		}
		if !strings.Contains(buf.String(), "</html>") {
			t.Errorf("render %s: incomplete page", name)
		}
	}
}

// TestADestinationsTestShowsTheBrokersAnswer: a destination's sample has
// no http response; the page says it was published and shows what the
// broker answered.
func TestADestinationsTestShowsTheBrokersAnswer(t *testing.T) {
	t.Parallel()
	p, err := parsePages(mustLoadStatic())
	if err != nil {
		t.Fatal(err)
	}
	hook := store.Webhook{ID: "w1", Name: "Bus", Type: "rabbitmq", URL: "rabbitmq://127.0.0.1:5672/licensing/events", Events: kindsOf("license.created")}
	answer := `confirmed by RabbitMQ (exchange "licensing", routing key "events", delivery tag 1)`
	res := &delivery.TestResult{Event: "license.created", Succeeded: true, Published: &delivery.TestPublished{Answer: answer, DurationMS: 7}}
	var buf bytes.Buffer
	if err := p.byName["webhook_test"].ExecuteTemplate(&buf, "layout", view{Email: "a@example.com", CSRF: "tok", Data: testData{Webhook: hook, Event: "license.created", Result: res}}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"Published.", "Broker's answer", html.EscapeString(answer)} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if strings.Contains(page, "No response arrived") {
		t.Error("the page says no response arrived, of a confirmed publish")
	}
}

func kindsOf(ks ...string) (out []event.Kind) {
	for _, k := range ks {
		out = append(out, event.Kind(k))
	}
	return out
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/webhooks": "/webhooks", "/webhook-event-logs?status=failed": "/webhook-event-logs?status=failed",
		"": "/x", "//evil.example": "/x", "https://evil.example/": "/x", "/\\evil.example": "/x", "webhooks": "/x",
	} {
		if got := localPath(in, "/x"); got != want {
			t.Errorf("localPath(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestCharts(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	c := newSuccessChart(since, []store.HourOfAttempts{
		{Start: since, Attempts: 4, Succeeded: 4},
		{Start: since.Add(23 * time.Hour), Attempts: 3, Succeeded: 1},
	})
	if len(c.Bars) != successHours {
		t.Fatalf("%d bars; want %d", len(c.Bars), successHours)
	}
	if c.Summary != "Last 24 hours: 7 attempts, 5 succeeded (71%)." {
		t.Errorf("summary %q", c.Summary)
	}
	if c.Bars[0].Class != "ok" || c.Bars[0].Height != plotHeight || c.Bars[23].Class != "bad" || c.Bars[1].Class != "none" {
		t.Errorf("bars %+v … %+v", c.Bars[0], c.Bars[23])
	}
	if !strings.Contains(c.Bars[23].Label, "Nov 21 08:00–09:00 UTC: 1 of 3 attempts succeeded (33%)") {
		t.Errorf("label %q", c.Bars[23].Label)
	}
	// The hour labels carry the date where a day starts: the first, and
	// the first after midnight.
	var hours []string
	for _, tk := range c.XTicks {
		hours = append(hours, tk.Text)
	}
	if got, want := strings.Join(hours, ", "), "Nov 20 09:00, 15:00, 21:00, Nov 21 03:00"; got != want {
		t.Errorf("hour labels %q; want %q", got, want)
	}
	if got := newSuccessChart(since, nil).Summary; got != "No attempts in the last 24 hours." {
		t.Errorf("empty summary %q", got)
	}

	var pts []store.AttemptPoint
	for i := 1; i <= 20; i++ {
		pts = append(pts, store.AttemptPoint{DurationMS: int64(i * 10), Succeeded: i != 20})
	}
	l := newLatencyChart(pts)
	if l.Median != 100 || l.P95 != 190 || l.Slowest != 200 {
		t.Errorf("median %d, p95 %d, slowest %d; want 100, 190, 200", l.Median, l.P95, l.Slowest)
	}
	if l.Summary != "Last 20 attempts: median 100 ms, 95th percentile 190 ms, slowest 200 ms." {
		t.Errorf("summary %q", l.Summary)
	}
	if last := l.Bars[19]; last.Class != "bad" || last.Height != plotHeight {
		t.Errorf("slowest bar %+v; want full height, failed", last)
	}
	// The latency axis speaks one unit.
	tests := []struct {
		slowest int64
		want    string
	}{
		{200, "0 ms, 100 ms, 200 ms"},
		{8000, "0 s, 5 s, 10 s"},
		{1500, "0 s, 1 s, 2 s"},
		{900, "0 s, 0.5 s, 1 s"},
	}
	for _, tt := range tests {
		var labels []string
		for _, tk := range newLatencyChart([]store.AttemptPoint{{DurationMS: tt.slowest, Succeeded: true}}).YTicks {
			labels = append(labels, tk.Text)
		}
		if got := strings.Join(labels, ", "); got != tt.want {
			t.Errorf("latency axis up to %d ms reads %q; want %q", tt.slowest, got, tt.want)
		}
	}
	for v, want := range map[int64]int64{0: 10, 7: 10, 11: 20, 150: 200, 201: 500, 1500: 2000, 15000: 20000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%d) = %d; want %d", v, got, want)
		}
	}
	if duration(1250) != "1.25 s" || duration(12) != "12 ms" {
		t.Errorf("duration: %q, %q", duration(1250), duration(12))
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	if got := expiry(created, created); !got.Equal(created.Add(idleTimeout)) {
		t.Errorf("fresh session ends %v; want after the idle timeout", got)
	}
	late := created.Add(maxLifetime - time.Hour)
	if got := expiry(created, late); !got.Equal(created.Add(maxLifetime)) {
		t.Errorf("near its end a session ends %v; want at the absolute limit %v", got, created.Add(maxLifetime))
	}
}

// newTestLimiter is a sign-in limiter over a new SQLite store.
func newTestLimiter(t *testing.T) *limiter {
	key := make([]byte, 32)
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "herald.db"), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &limiter{store: st, key: []byte("device key")}
}

func TestSignInLimiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newTestLimiter(t)
	take := func(email, addr string, known bool) time.Duration {
		t.Helper()
		w, err := l.take(ctx, email, addr, known)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for range maxPerPair {
		if take("A@example.com", "192.0.2.1", false) > 0 {
			t.Fatal("limited too early")
		}
	}
	if w := take("a@EXAMPLE.com", "192.0.2.1", false); w <= 0 {
		t.Errorf("after %d failures the email from the same address, in any case, is not limited", maxPerPair)
	}
	// The owner, elsewhere, is not locked out by a stranger's failures.
	if w := take("a@example.com", "198.51.100.7", false); w != 0 {
		t.Errorf("the same email from another address waits %v", w)
	}
	// A guesser spread over many addresses is stopped by the email's limit,
	// except in a browser that has signed in as that email before.
	for i := range maxPerEmail {
		take("b@example.com", fmt.Sprintf("203.0.113.%d", i%250), false)
	}
	if w := take("b@example.com", "198.51.100.9", false); w <= 0 {
		t.Errorf("after %d failures from many addresses the email is not limited", maxPerEmail)
	}
	if w := take("b@example.com", "198.51.100.9", true); w != 0 {
		t.Errorf("a browser that signed in as the email before waits %v", w)
	}
	if err := l.succeeded(ctx, "b@example.com", "198.51.100.9"); err != nil {
		t.Fatal(err)
	}
	if w := take("b@example.com", "198.51.100.10", false); w != 0 {
		t.Errorf("after the owner signed in, the email still waits %v", w)
	}
}

func TestKnownBrowserMarkIsBoundToTheEmailAndKey(t *testing.T) {
	t.Parallel()
	a := &limiter{key: []byte("one key")}
	b := &limiter{key: []byte("another key")}
	if a.mark("Owner@Example.com") != a.mark("owner@example.com") {
		t.Error("the mark depends on the email's case")
	}
	if a.mark("owner@example.com") == a.mark("other@example.com") || a.mark("owner@example.com") == b.mark("owner@example.com") {
		t.Error("the mark is the same for another email or another key")
	}
}

func TestSignInLimiterHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t)
	var passed atomic.Int32
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			if w, err := l.take(context.Background(), "a@example.com", "192.0.2.1", false); err == nil && w == 0 {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := passed.Load(); got != maxPerPair {
		t.Errorf("%d of 60 concurrent attempts went through; want %d", got, maxPerPair)
	}
}

func TestThousands(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {50000, "50,000"}, {1234567, "1,234,567"}, {-1500, "-1,500"}} {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestParseDay(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		end  bool
		want time.Time
		ok   bool
	}{
		{"", false, time.Time{}, true},
		{"2026-11-25", false, day, true},
		{"2026-11-25", true, day.AddDate(0, 0, 1), true}, // a range's last day is included whole
		{"2026-11-25T10:30", true, day.Add(10*time.Hour + 30*time.Minute), true},
		{"2026-11-25T10:30:15", false, day.Add(10*time.Hour + 30*time.Minute + 15*time.Second), true},
		{"25/11/2026", false, time.Time{}, false},
		{"2026-02-30", false, time.Time{}, false},
	} {
		got, ok := parseDay(tt.in, tt.end)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("parseDay(%q, %v) = %v, %v; want %v, %v", tt.in, tt.end, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFailureReadsAsASentence(t *testing.T) {
	t.Parallel()
	code := func(c int) *int { return &c }
	tests := []struct {
		reason string
		code   *int
		ms     int64
		want   string
	}{
		{"receiver answered 500", code(500), 4, "The receiver answered 500 Internal Server Error in 4 ms."},
		{`receiver answered 302 redirect to "/x"; redirects are not followed`, code(302), 12, "The receiver answered 302 Found in 12 ms; redirects are not followed."},
		{"timed out after 15s reading the response", code(200), 15000, "The receiver answered 200 OK in 15 s, but timed out after 15s reading the response."},
		{"", code(204), 3, "The receiver answered 204 No Content in 3 ms."},
		{"timed out after 15s with no response", nil, 0, "Timed out after 15s with no response."},
		{"", nil, 0, "No answer."},
	}
	for _, tt := range tests {
		if got := failure(tt.reason, tt.code, tt.ms); got != tt.want {
			t.Errorf("failure(%q, %v, %d) = %q; want %q", tt.reason, tt.code, tt.ms, got, tt.want)
		}
	}
}
