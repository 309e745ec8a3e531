package delivery

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/webhook"
)

// ErrWebhookDisabled refuses a resend to a disabled webhook: the
// specification's disabled webhook sends no POST for its events, whoever asks.
// (A suspended one may be resent to: that is how it recovers.)
var ErrWebhookDisabled = errors.New("the webhook is disabled; enable it to resend")

// resend (Dispatcher.Resend) attempts a log's delivery now, with the same bytes, and records the
// attempt on the same log with trigger "resend". It goes out whether the
// webhook is Healthy, Unhealthy or Suspended, but not while it is disabled. A
// 2xx completes the log as succeeded and makes the webhook Healthy at once; a
// failure changes no health (see attempt.ResendFailed for the log's status).
//
// The log is marked in flight in the database first, so a second resend,
// from this process or another, answers store.ErrConflict and no claim takes
// the log meanwhile: one request asks, one POST goes out. The request takes
// one of the webhook's slots like an automatic attempt; when none frees in
// time, the resend is not made (ErrBusy).
func (a *attempts) resend(ctx context.Context, accountID, logID string) error {
	// A client that hangs up does not cut the resend short: it is made and
	// recorded whole, within the attempt time-out.
	ctx = context.WithoutCancel(ctx)
	// The mark outlives the wait for a slot, the attempt and its recording.
	until := a.cfg.Now().Add(manualWait + a.cfg.AttemptTimeout + 30*time.Second)
	c, err := a.store.BeginResend(ctx, accountID, logID, until)
	if err != nil {
		return err
	}
	if !c.Enabled {
		a.endResend(ctx, logID)
		return ErrWebhookDisabled
	}
	if c.URL == "" {
		// A pull webhook's: read again by its consumer, not POSTed.
		if err := a.store.RequeuePull(ctx, logID, ""); err != nil {
			a.endResend(ctx, logID)
			return fmt.Errorf("resend: %w", err)
		}
		return nil
	}
	var span trace.Span
	res, err := a.slots.manual(nil, c.AccountID, c.WebhookID, func() Result {
		// A child of the request that asked, linked to the trace that fired
		// the event: the resend is this request's work, and part of the
		// event's story.
		var sctx context.Context
		sctx, span = a.startSpan(ctx, spanOf{name: SpanResend, eventID: c.EventID, kind: event.Kind(c.Event), webhookID: c.WebhookID,
			logID: c.LogID, fired: c.TraceParent, link: true})
		req := a.sender.request(sctx, c)
		req.resend = true
		return a.sender.Send(sctx, req)
	})
	if err != nil {
		a.endResend(ctx, logID)
		return err
	}
	a.cfg.Metrics.attempted(res)
	o := attempt.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Trigger: attempt.TriggerResend, Attempt: a.attemptRecord(res), Result: attempt.Delivered}
	if !res.OK() {
		o.Result, o.Reason = attempt.ResendFailed, res.Err
	}
	endSpan(span, res, o.Result.String())
	suspended, err := a.store.Complete(ctx, []attempt.Outcome{o}, a.cfg.SuspendAfter)
	if err != nil {
		return fmt.Errorf("resend: %w", err)
	}
	if len(suspended) > 0 && a.cfg.OnSuspend != nil {
		a.cfg.OnSuspend(suspended)
	}
	return nil
}

// endResend ends a resend's mark when nothing was sent; if the database does
// not answer, the mark ends by itself.
func (a *attempts) endResend(ctx context.Context, logID string) {
	if err := a.store.EndResend(ctx, logID); err != nil {
		a.cfg.Logger.Warn("end resend", "log", logID, "err", err)
	}
}

// TestResult is what the Test action shows: the exact request, the
// receiver's answer, and optionally whether the receiver rejected the same
// sample under a wrong signature.
type TestResult struct {
	Event    event.Kind    `json:"event"`
	Request  TestRequest   `json:"request"`
	Response *TestResponse `json:"response"`
	// Published is a destination's confirmation by its broker; nil for an
	// http webhook, and when the broker did not confirm.
	Published         *TestPublished     `json:"published"`
	Error             *string            `json:"error"`
	Succeeded         bool               `json:"succeeded"`
	VerificationCheck *VerificationCheck `json:"verificationCheck"`
	// SignedWith says which token signed webhook-signature: the webhook's
	// token, or the next token of the rotation under way.
	SignedWith SignedWith `json:"signedWith"`
}

// SignedWith names the token that signed a Test's webhook-signature.
type SignedWith string

// The tokens a Test can sign with.
const (
	// SignedWithCurrent: the token that signs deliveries' webhook-signature
	// now; during a rotation the old one, and the request then also carries
	// webhook-signature-next, exactly like a delivery.
	SignedWithCurrent SignedWith = "current"
	// SignedWithNext: the next token of the rotation under way, on
	// webhook-signature alone, as deliveries will be signed once the
	// rotation ends; it shows the receiver accepts the next token before
	// the switch.
	SignedWithNext SignedWith = "next"
)

// Valid reports whether s names a token.
func (s SignedWith) Valid() bool { return s == SignedWithCurrent || s == SignedWithNext }

// ErrNoRotation refuses a Test signed with the next token when no rotation
// is under way.
var ErrNoRotation = errors.New("no token rotation is under way, so there is no next token to sign with")

// TestOptions tunes a Test.
type TestOptions struct {
	// CheckVerification also sends the sample under a wrong signature.
	CheckVerification bool
	// SignWith picks the token that signs webhook-signature; "" is
	// SignedWithCurrent.
	SignWith SignedWith
}

// TestRequest is the request as sent; Body is the exact string signed.
type TestRequest struct {
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	Body      string            `json:"body"`
	Signature string            `json:"signature"`
}

// TestResponse is the receiver's answer, its body cut at 64 KiB: a Test is
// shown once and never stored, so it shows more than an attempt keeps.
type TestResponse struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	DurationMS int64             `json:"durationMs"`
}

// TestPublished is a broker's confirmation of a destination's sample.
type TestPublished struct {
	Answer     string `json:"answer"`
	DurationMS int64  `json:"durationMs"`
}

// VerificationCheck reports the send of the sample with a wrong signature. A
// receiver that verifies rejects it (non-2xx); one that accepts it would
// accept forged deliveries.
type VerificationCheck struct {
	Sent       bool    `json:"sent"`
	StatusCode *int    `json:"statusCode"`
	Rejected   bool    `json:"rejected"`
	Error      *string `json:"error"`
}

// test (Dispatcher.Test) sends a sample payload of kind to a webhook, signed like a real
// delivery. It records nothing and never touches health. Its requests take
// the webhook's slots like any attempt (ErrBusy when none frees in time).
func (a *attempts) test(ctx context.Context, accountID, webhookID string, kind event.Kind, opt TestOptions) (TestResult, error) {
	checkVerification := opt.CheckVerification
	w, err := a.store.TestTarget(ctx, accountID, webhookID)
	if err != nil {
		return TestResult{}, err
	}
	signedWith := SignedWithCurrent
	if opt.SignWith == SignedWithNext {
		if w.NextToken == "" {
			return TestResult{}, ErrNoRotation
		}
		// As deliveries will be signed after the switch: the next token alone.
		w.Token, w.NextToken, signedWith = w.NextToken, "", SignedWithNext
	}
	now := a.cfg.Now()
	id := attempt.NewID()
	body, err := event.Build(id, kind, event.Sample(kind, now), now)
	if err != nil {
		return TestResult{}, err
	}
	req := a.sender.request(ctx, attempt.Claim{WebhookID: w.WebhookID, Event: string(kind), URL: w.URL, EventID: id, Body: body, Token: w.Token, NextToken: w.NextToken, Headers: w.Headers,
		SignatureScheme: w.SignatureScheme})
	if req.Body != nil {
		body = req.Body // thin, when the webhook asks for it
	}
	res, err := a.slots.manual(ctx.Done(), accountID, w.WebhookID, func() Result {
		sctx, span := a.startSpan(ctx, spanOf{name: SpanTest, eventID: id, kind: kind, webhookID: w.WebhookID})
		res := a.sender.Send(sctx, req)
		endSpan(span, res, testOutcome(res.OK()))
		return res
	})
	if err != nil {
		return TestResult{}, err
	}
	// The signature as sent: for Standard Webhooks it is made at the
	// moment of sending, over that moment's timestamp.
	sig := req.Signature
	if v, ok := flatten(res.Headers)[webhook.SignatureHeader]; ok {
		sig = v
	}
	out := TestResult{
		Event:      kind,
		Request:    TestRequest{URL: w.URL, Headers: flatten(res.Headers), Body: string(body), Signature: sig},
		Succeeded:  res.OK(),
		SignedWith: signedWith,
	}
	if res.StatusCode != nil {
		out.Response = &TestResponse{StatusCode: *res.StatusCode, Headers: flatten(res.RespHeader),
			Body: string(res.RespBody), DurationMS: res.Duration.Milliseconds()}
	}
	if isDestination(w.URL) && res.OK() {
		out.Published = &TestPublished{Answer: string(res.RespBody), DurationMS: res.Duration.Milliseconds()}
	}
	if res.Err != "" {
		out.Error = &res.Err
	}
	switch {
	case checkVerification && !res.OK():
		reason := "not sent: the correctly signed sample was not accepted, so a rejection would prove nothing"
		out.VerificationCheck = &VerificationCheck{Error: &reason}
	case checkVerification && isDestination(w.URL):
		reason := "not sent: a broker takes any message, whatever its signature; its consumers verify it"
		out.VerificationCheck = &VerificationCheck{Error: &reason}
	case checkVerification:
		// Signed with a token the receiver cannot hold: well-formed, and wrong.
		forged, err := a.slots.manual(ctx.Done(), accountID, w.WebhookID, func() Result {
			sctx, span := a.startSpan(ctx, spanOf{name: SpanTest, eventID: id, kind: kind, webhookID: w.WebhookID})
			if span != nil {
				span.SetAttributes(attribute.Bool("herald.verification_check", true))
			}
			forged := Request{URL: w.URL, EventID: id, Body: body, Signature: webhook.Sign(auth.NewWebhookToken(), body), Headers: w.Headers, via: req.via}
			switch w.SignatureScheme {
			case attempt.SchemeStandardWebhooks:
				forged.Signature, forged.StandardTokens = "", []string{auth.NewWebhookToken()}
			case attempt.SchemeStandardEd25519:
				forged.Signature, forged.StandardTokens, forged.Ed25519 = "", []string{forgedKey()}, true
			}
			res := a.sender.Send(sctx, forged)
			// Here a rejection is what a verifying receiver should answer, so
			// only a POST that got no answer is an error.
			check, outcome := Result{StatusCode: res.StatusCode}, "accepted"
			switch {
			case res.StatusCode == nil:
				check.Err, outcome = res.Err, "failed"
			case !res.OK():
				outcome = "rejected"
			}
			endSpan(span, check, outcome)
			return res
		})
		vc := &VerificationCheck{Sent: err == nil, StatusCode: forged.StatusCode}
		switch {
		case err != nil:
			reason := "not sent: " + err.Error()
			vc.Error = &reason
		case forged.StatusCode == nil:
			vc.Error = &forged.Err
		case *forged.StatusCode < 200 || *forged.StatusCode >= 300:
			vc.Rejected = true
		}
		out.VerificationCheck = vc
	}
	return out, nil
}

// testOutcome names a Test send's outcome on its span.
func testOutcome(ok bool) string {
	if ok {
		return "succeeded"
	}
	return "failed"
}

// flatten shows headers with lowercase names and repeated values joined.
func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	return out
}

// forgedKey is a private key no receiver has the public half of.
func forgedKey() string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("ed25519 key: %v", err)) // crypto/rand does not fail
	}
	return webhook.PrivateKeyString(priv)
}
