package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testAttemptHeadersAreKeptBounded: each attempt keeps the headers sent and
// answered, through the bulk path (automatic attempts) and the one-by-one
// path (a resend), in order, within MaxAttemptHeaders lines and
// MaxAttemptHeaderBytes bytes with the rest counted; herald's own request
// headers come first and are always kept. A pending log's UpdatedAt is the
// moment its attempt was claimed, which the portal shows as "in flight since".
func testAttemptHeadersAreKeptBounded(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 4)
	b.Clock.Add(time.Second) // claimed a second after the firing
	claims := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(claims) != 4 {
		t.Fatalf("claimed %d; want 4", len(claims))
	}
	for _, c := range claims {
		if l := b.log(t, c.LogID); l.Status != store.Pending || !l.UpdatedAt.Equal(b.Clock.Now()) {
			t.Errorf("claimed log: %s updated %s; want pending, updated at the claim (%s)", l.Status, l.UpdatedAt, b.Clock.Now())
		}
	}
	sent := []store.Header{hdr("content-type", "application/json; charset=utf-8"), hdr("webhook-signature", "c2lnbmF0dXJl")}
	many := make([]store.Header, 80)
	for i := range many {
		many[i] = hdr(fmt.Sprintf("x-h%02d", i), "v")
	}
	big := []store.Header{hdr("x-big", strings.Repeat("b", store.MaxAttemptHeaderBytes)), hdr("x-small", "kept")}
	tests := []struct {
		name    string
		headers *store.AttemptHeaders
		want    *store.AttemptHeaders
	}{
		{"small", &store.AttemptHeaders{Request: sent, Response: []store.Header{hdr("server", "r"), hdr("x-é", "ü\x00")}},
			&store.AttemptHeaders{Request: sent, Response: []store.Header{hdr("server", "r"), hdr("x-é", "ü\uFFFD")}}},
		{"too many lines", &store.AttemptHeaders{Request: sent, Response: many},
			&store.AttemptHeaders{Request: sent, Response: many[:store.MaxAttemptHeaders-len(sent)], Omitted: 80 - (store.MaxAttemptHeaders - len(sent))}},
		{"too many bytes", &store.AttemptHeaders{Request: sent, Response: big},
			&store.AttemptHeaders{Request: sent, Response: big[1:], Omitted: 1}},
		{"none", nil, nil},
	}
	var outs []store.Outcome
	for i, tt := range tests {
		o := Outcome(claims[i], store.Delivered, 200, b.Clock.Now())
		o.Attempt.Headers = tt.headers
		outs = append(outs, o)
	}
	b.Complete(t, b.St, 50, outs...)
	for i, tt := range tests {
		l := b.log(t, claims[i].LogID)
		if len(l.Attempts) != 1 {
			t.Fatalf("%s: %d attempts; want 1", tt.name, len(l.Attempts))
		}
		checkHeaders(t, tt.name, l.Attempts[0].Headers, tt.want)
	}

	// A resend goes through the one-by-one path.
	resend := store.Outcome{LogID: claims[0].LogID, WebhookID: claims[0].WebhookID, Trigger: store.TriggerResend, Result: store.Delivered}
	resend.Attempt = Outcome(claims[0], store.Delivered, 201, b.Clock.Now()).Attempt
	resend.Attempt.Headers = &store.AttemptHeaders{Request: sent, Response: many}
	b.Complete(t, b.St, 50, resend)
	l := b.log(t, claims[0].LogID)
	if len(l.Attempts) != 2 {
		t.Fatalf("resent log: %d attempts; want 2", len(l.Attempts))
	}
	checkHeaders(t, "resend", l.Attempts[1].Headers, tests[1].want)
}

func checkHeaders(t *testing.T, name string, got, want *store.AttemptHeaders) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: headers %+v; want %+v", name, got, want)
	}
	if got == nil {
		return
	}
	if fmt.Sprint(got.Request) != fmt.Sprint(want.Request) || fmt.Sprint(got.Response) != fmt.Sprint(want.Response) || got.Omitted != want.Omitted {
		t.Errorf("%s: headers\n%+v\nwant\n%+v", name, *got, *want)
	}
	lines, size := 0, 0
	for _, h := range append(append([]store.Header{}, got.Request...), got.Response...) {
		lines, size = lines+1, size+len(h.Name)+len(h.Value)
	}
	if lines > store.MaxAttemptHeaders || size > store.MaxAttemptHeaderBytes {
		t.Errorf("%s: %d lines, %d bytes kept; want at most %d and %d", name, lines, size, store.MaxAttemptHeaders, store.MaxAttemptHeaderBytes)
	}
}

func hdr(name, value string) store.Header { return store.Header{Name: name, Value: value} }
