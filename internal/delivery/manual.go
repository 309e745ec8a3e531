package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/webhook"
)

// ErrWebhookDisabled refuses a resend to a disabled webhook: the
// specification's disabled webhook sends no POST for its events, whoever asks.
// (A suspended one may be resent to: that is how it recovers.)
var ErrWebhookDisabled = errors.New("the webhook is disabled; enable it to resend")

// Resend attempts a log's delivery now, with the same bytes, and records the
// attempt on the same log with trigger "resend". It goes out whether the
// webhook is Healthy, Unhealthy or Suspended, but not while it is disabled. A
// 2xx completes the log as succeeded and makes the webhook Healthy at once; a
// failure changes no health (see store.ResendFailed for the log's status).
func (d *Dispatcher) Resend(ctx context.Context, accountID, logID string) (store.EventLog, error) {
	c, err := d.store.ResendTarget(ctx, accountID, logID)
	if err != nil {
		return store.EventLog{}, err
	}
	if !c.Enabled {
		return store.EventLog{}, ErrWebhookDisabled
	}
	// A client that hangs up does not cut the attempt short: it is made and
	// recorded whole, within the attempt time-out.
	res := d.sender.Send(context.WithoutCancel(ctx), Request{URL: c.URL, EventID: c.EventID, Body: c.Body, Signature: webhook.Sign(c.Token, c.Body)})
	d.cfg.Metrics.attempted(res)
	o := store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Trigger: store.TriggerResend, Attempt: d.attemptRecord(res), Result: store.Delivered}
	if !res.OK() {
		o.Result, o.Reason = store.ResendFailed, res.Err
	}
	suspended, err := d.store.Complete(context.WithoutCancel(ctx), []store.Outcome{o}, d.cfg.SuspendAfter)
	if err != nil {
		return store.EventLog{}, fmt.Errorf("resend: %w", err)
	}
	if len(suspended) > 0 && d.cfg.OnSuspend != nil {
		d.cfg.OnSuspend(suspended)
	}
	return d.store.Log(ctx, accountID, logID)
}

// TestResult is what the Test action shows: the exact request, the
// receiver's answer, and optionally whether the receiver rejected the same
// sample under a wrong signature.
type TestResult struct {
	Event             event.Kind         `json:"event"`
	Request           TestRequest        `json:"request"`
	Response          *TestResponse      `json:"response"`
	Error             *string            `json:"error"`
	Succeeded         bool               `json:"succeeded"`
	VerificationCheck *VerificationCheck `json:"verificationCheck"`
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

// VerificationCheck reports the send of the sample with a wrong signature. A
// receiver that verifies rejects it (non-2xx); one that accepts it would
// accept forged deliveries.
type VerificationCheck struct {
	Sent       bool    `json:"sent"`
	StatusCode *int    `json:"statusCode"`
	Rejected   bool    `json:"rejected"`
	Error      *string `json:"error"`
}

// Test sends a sample payload of kind to a webhook, signed like a real
// delivery. It records nothing and never touches health.
func (d *Dispatcher) Test(ctx context.Context, accountID, webhookID string, kind event.Kind, checkVerification bool) (TestResult, error) {
	w, err := d.store.Webhook(ctx, accountID, webhookID)
	if err != nil {
		return TestResult{}, err
	}
	token, err := d.store.WebhookToken(ctx, accountID, webhookID)
	if err != nil {
		return TestResult{}, err
	}
	now := time.Now()
	id := store.NewID()
	body, err := event.Build(id, kind, event.Sample(kind, now), now)
	if err != nil {
		return TestResult{}, err
	}
	sig := webhook.Sign(token, body)
	res := d.sender.Send(ctx, Request{URL: w.URL, EventID: id, Body: body, Signature: sig})
	out := TestResult{
		Event:     kind,
		Request:   TestRequest{URL: w.URL, Headers: flatten(res.Headers), Body: string(body), Signature: sig},
		Succeeded: res.OK(),
	}
	if res.StatusCode != nil {
		out.Response = &TestResponse{StatusCode: *res.StatusCode, Headers: flatten(res.RespHeader),
			Body: string(res.RespBody), DurationMS: res.Duration.Milliseconds()}
	}
	if res.Err != "" {
		out.Error = &res.Err
	}
	switch {
	case checkVerification && !res.OK():
		reason := "not sent: the correctly signed sample was not accepted, so a rejection would prove nothing"
		out.VerificationCheck = &VerificationCheck{Error: &reason}
	case checkVerification:
		// Signed with a token the receiver cannot hold: well-formed, and wrong.
		forged := d.sender.Send(ctx, Request{URL: w.URL, EventID: id, Body: body, Signature: webhook.Sign(auth.NewWebhookToken(), body)})
		vc := &VerificationCheck{Sent: true, StatusCode: forged.StatusCode}
		switch {
		case forged.StatusCode == nil:
			vc.Error = &forged.Err
		case *forged.StatusCode < 200 || *forged.StatusCode >= 300:
			vc.Rejected = true
		}
		out.VerificationCheck = vc
	}
	return out, nil
}

// flatten shows headers with lowercase names and repeated values joined.
func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	return out
}
