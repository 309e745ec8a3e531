package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// rotatingReceiver is a receiver that follows docs/receiving.md, "Rotating
// the token": it verifies webhook-signature against every token its owner
// has configured, and its owner changes that list as the steps say. It
// records, for each request, which configured token verified it (-1: none)
// and whether webhook-signature-next verified under the next token.
type rotatingReceiver struct {
	URL string

	mu     sync.Mutex
	tokens []string
	next   string // the rotation's next token, once the owner knows it
	seen   []rotationSeen
	// failing marks (in its body) the event the receiver answers 503 until
	// it arrives signed with the next token: a retry that crosses the switch.
	failing []byte
}

type rotationSeen struct {
	eventID    string
	verifiedBy string // the token that verified webhook-signature, "" for none
	nextHeader string // webhook-signature-next as sent
	body       []byte
	status     int
}

func newRotatingReceiver(t *testing.T, token string) *rotatingReceiver {
	r := &rotatingReceiver{tokens: []string{token}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *rotatingReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	sig := req.Header.Get(webhook.SignatureHeader)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := rotationSeen{eventID: req.Header.Get(webhook.IDHeader), nextHeader: req.Header.Get(webhook.NextSignatureHeader), body: body, status: http.StatusNoContent}
	if webhook.VerifyAny(r.tokens, body, sig) == nil {
		for _, tok := range r.tokens {
			if webhook.Verify(tok, body, sig) == nil {
				s.verifiedBy = tok
			}
		}
	}
	switch {
	case s.verifiedBy == "":
		s.status = http.StatusUnauthorized
	case r.failing != nil && bytes.Contains(body, r.failing) && (r.next == "" || s.verifiedBy != r.next):
		s.status = http.StatusServiceUnavailable // an outage of the receiver's own, until the switch
	}
	r.seen = append(r.seen, s)
	w.WriteHeader(s.status)
}

// configure replaces the tokens the receiver accepts, as its owner's deploy
// would.
func (r *rotatingReceiver) configure(next string, tokens ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens, r.next = tokens, next
}

func (r *rotatingReceiver) failUntilSwitched(marker string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing = []byte(marker)
}

func (r *rotatingReceiver) requests() []rotationSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func TestTokenRotationFailsNoDeliveryOfAReceiverThatFollowsTheSteps(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testTokenRotationFailsNoDelivery)
}

// testTokenRotationFailsNoDelivery walks the documented steps with events
// firing before, during and after the rotation, one of them failing at the
// receiver until it is retried after the switch, and a resend of an event
// from before the rotation at the end: every request the receiver gets
// verifies under a token it holds at that moment.
func testTokenRotationFailsNoDelivery(t *testing.T, db string) {
	// Enough attempts that the failing event is still being retried when
	// the rotation is finished, however slowly the machine runs.
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{MaxAttempts: 100000, RetryInterval: 20 * time.Millisecond}})
	ctx := context.Background()
	first := "whsec_first_token_0123456789abcdef"
	rcv := newRotatingReceiver(t, first)
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "rotating", URL: rcv.URL, Events: []string{"license.created"}, Token: first})
	if err != nil {
		t.Fatal(err)
	}
	// fire creates a license whose metadata holds marker and returns the
	// id of the event it fired.
	fire := func(marker string) string {
		h.CreateLicense(map[string]any{"marker": marker})
		var eventID string
		heraldtest.Eventually(t, 30*time.Second, "the event log of "+marker, func() bool {
			for _, l := range h.Logs("webhookId=" + hook.ID) {
				if strings.Contains(l.Payload, marker) {
					eventID = l.EventID
					return true
				}
			}
			return false
		})
		return eventID
	}
	delivered := func(eventID string) {
		heraldtest.Eventually(t, 30*time.Second, "event "+eventID+" delivered", func() bool {
			logs := h.Logs("eventId=" + eventID)
			return len(logs) == 1 && logs[0].Status == "succeeded"
		})
	}

	before := fire("before")
	delivered(before)

	// Step 1: rotate.
	rotated, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour)
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if rotated.TokenRotation == nil || !rotated.TokenRotation.EndsAt.Equal(rotated.TokenRotation.StartedAt.Add(time.Hour)) {
		t.Fatalf("tokenRotation after rotate: %+v; want an hour from its start", rotated.TokenRotation)
	}
	token, next, err := h.API.WebhookTokens(ctx, hook.ID)
	if err != nil || token != first || next == "" || next == first {
		t.Fatalf("tokens during the rotation: %q, %q, %v; want the first token and a new one", token, next, err)
	}
	during := fire("during") // the receiver still holds the first token only
	delivered(during)

	// Step 2: the receiver accepts either token; a test signed with the next
	// token shows it does.
	rcv.configure(next, first, next)
	for _, tc := range []struct{ signWith, want string }{{"", "current"}, {"next", "next"}} {
		res, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{SignWith: tc.signWith, CheckVerification: true})
		if err != nil || !res.Succeeded || res.SignedWith != tc.want || res.VerificationCheck == nil || !res.VerificationCheck.Rejected {
			t.Fatalf("test signed with %q: %+v, %v; want succeeded, signedWith %s, forgery rejected", tc.signWith, res, err, tc.want)
		}
		hasNext := res.Request.Headers[webhook.NextSignatureHeader] != ""
		if hasNext != (tc.want == "current") {
			t.Errorf("test signed with %s: webhook-signature-next sent %v; want %v", tc.want, hasNext, tc.want == "current")
		}
	}

	// An event the receiver fails (its own outage) until it comes signed
	// with the next token, so its retries cross the switch.
	rcv.failUntilSwitched("crossing")
	crossing := fire("crossing")
	heraldtest.Eventually(t, 30*time.Second, "a failed attempt of the crossing event", func() bool {
		l := h.Logs("eventId=" + crossing)
		return len(l) == 1 && l[0].AttemptCount >= 1 && l[0].Status == "retrying"
	})

	// Step 3: finish the rotation.
	finished, err := h.API.FinishWebhookTokenRotation(ctx, hook.ID)
	if err != nil || finished.TokenRotation != nil {
		t.Fatalf("finish: %+v, %v; want no rotation", finished.TokenRotation, err)
	}
	if token, after, err := h.API.WebhookTokens(ctx, hook.ID); err != nil || token != next || after != "" {
		t.Fatalf("tokens after the finish: %q, %q, %v; want the next token alone", token, after, err)
	}
	delivered(crossing)
	after := fire("after")
	delivered(after)

	// Step 4: once nothing signed with the old token can still arrive (here:
	// every log completed), the receiver drops it.
	heraldtest.Eventually(t, 30*time.Second, "every log completed", func() bool {
		for _, l := range h.Logs("webhookId=" + hook.ID) {
			if l.Status != "succeeded" {
				return false
			}
		}
		return true
	})
	rcv.configure(next, next)
	last := fire("last")
	delivered(last)
	if _, err := h.API.ResendEventLog(ctx, h.Logs("eventId=" + before)[0].ID); err != nil {
		t.Fatalf("resend the event from before the rotation: %v", err)
	}
	delivered(before)
	if got := h.Log(h.Logs("eventId=" + before)[0].ID); got.Attempts[len(got.Attempts)-1].Trigger != "resend" || *got.StatusCode != 204 {
		t.Errorf("resend of the event from before the rotation: %+v; want a 204 resend", got)
	}

	// Every delivery verified under a token the receiver held; each was
	// signed with the token documented for its moment. (The tests' forged
	// requests, rejected above, carry ids of their own.)
	var crossed []string
	fired := []string{before, during, crossing, after, last}
	for _, s := range rcv.requests() {
		if !slices.Contains(fired, s.eventID) {
			continue
		}
		if s.verifiedBy == "" {
			t.Errorf("a request of event %s did not verify", s.eventID)
		}
		switch s.eventID {
		case during:
			if s.verifiedBy != first {
				t.Errorf("event during the overlap verified by %q; want the first token", s.verifiedBy)
			}
		case crossing:
			crossed = append(crossed, s.verifiedBy)
		case after, last:
			if s.verifiedBy != next || s.nextHeader != "" {
				t.Errorf("event after the switch: verified by %q, webhook-signature-next %q; want the next token alone", s.verifiedBy, s.nextHeader)
			}
		}
		if s.eventID == during || (s.eventID == crossing && s.verifiedBy == first) {
			if err := webhook.Verify(next, s.body, s.nextHeader); err != nil {
				t.Errorf("event %s during the overlap: webhook-signature-next %q: %v; want the next token's signature", s.eventID, s.nextHeader, err)
			}
		}
	}
	if len(crossed) < 2 || crossed[0] != first || crossed[len(crossed)-1] != next {
		t.Errorf("the crossing event was verified by %q; want the first token first and the next token last", crossed)
	}
}

func TestBadRotationInputNamesTheFieldAndChangesNothing(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testBadRotationInput)
}

func testBadRotationInput(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("keep", rcv.URL, "license.created")
	rotate, finish, test := "/v3/webhooks/"+hook.ID+"/token/rotate", "/v3/webhooks/"+hook.ID+"/token/rotate/finish", "/v3/webhooks/"+hook.ID+"/test"
	for _, tt := range []struct {
		name, path string
		body       any
		status     int
		field      string
	}{
		{"overlap under a minute", rotate, map[string]any{"overlapSeconds": 59}, 422, "overlapSeconds"},
		{"overlap over 30 days", rotate, map[string]any{"overlapSeconds": 2592001}, 422, "overlapSeconds"},
		{"negative overlap", rotate, map[string]any{"overlapSeconds": -3600}, 422, "overlapSeconds"},
		{"fractional overlap", rotate, map[string]any{"overlapSeconds": 60.5}, 422, "overlapSeconds"},
		{"overlap as text", rotate, map[string]any{"overlapSeconds": "3600"}, 422, "overlapSeconds"},
		{"a token of one's own", rotate, map[string]any{"token": "whsec_mine_0123456789"}, 422, "token"},
		{"malformed JSON", rotate, `{"overlapSeconds": `, 400, ""},
		{"finish with a field", finish, map[string]any{"now": true}, 422, "now"},
		{"finish with no rotation", finish, nil, 409, ""},
		{"test with an unknown token", test, map[string]any{"signWith": "old"}, 422, "signWith"},
		{"test with the next token, no rotation", test, map[string]any{"signWith": "next"}, 409, "signWith"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p struct {
				Status int
				Detail string
				Errors []struct{ Field, Detail string }
			}
			got := h.Do("POST", tt.path, tt.body, &p)
			if got != tt.status || p.Status != tt.status || p.Detail == "" {
				t.Fatalf("status %d (problem %+v); want %d", got, p, tt.status)
			}
			if tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field) {
				t.Errorf("errors %+v; want field %q named", p.Errors, tt.field)
			}
		})
	}
	w, err := h.API.Webhook(ctx, hook.ID)
	if err != nil || w.TokenRotation != nil {
		t.Errorf("after refused rotations: tokenRotation %+v, %v; want none", w.TokenRotation, err)
	}
	if token, next, err := h.API.WebhookTokens(ctx, hook.ID); err != nil || token != hook.Token || next != "" {
		t.Errorf("after refused rotations: tokens %q, %q, %v; want the token unchanged and no next", token, next, err)
	}
	if n := rcv.Count(); n != 0 {
		t.Errorf("refused tests sent %d requests; want none", n)
	}

	// A second rotation while one is under way is refused and keeps the first.
	if _, err := h.API.RotateWebhookToken(ctx, hook.ID, 0); err != nil {
		t.Fatal(err)
	}
	_, next, _ := h.API.WebhookTokens(ctx, hook.ID)
	var p struct{ Status int }
	if got := h.Do("POST", rotate, map[string]any{"overlapSeconds": 60}, &p); got != 409 {
		t.Errorf("a second rotation: %d; want 409", got)
	}
	w, _ = h.API.Webhook(ctx, hook.ID)
	if _, again, _ := h.API.WebhookTokens(ctx, hook.ID); again != next || w.TokenRotation == nil || !w.TokenRotation.EndsAt.Equal(w.TokenRotation.StartedAt.Add(24*time.Hour)) {
		t.Errorf("after a refused second rotation: next %q (was %q), rotation %+v; want the first, 24 hours", again, next, w.TokenRotation)
	}
}
