package e2e_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/openapitest"
	"github.com/heraldhq/herald/webhook"
)

// verifyToken is the token of the webhooks in these tests, chosen up front
// so that a receiver can verify under it before the webhook exists.
const verifyToken = "whsec_verification_check_test"

// testResult is the answer of POST /v3/webhooks/{id}/test.
type testResult struct {
	Request struct {
		Body      string `json:"body"`
		Signature string `json:"signature"`
	} `json:"request"`
	Response *struct {
		StatusCode int `json:"statusCode"`
	} `json:"response"`
	Succeeded         bool `json:"succeeded"`
	VerificationCheck *struct {
		Sent       bool    `json:"sent"`
		StatusCode *int    `json:"statusCode"`
		Rejected   bool    `json:"rejected"`
		Error      *string `json:"error"`
	} `json:"verificationCheck"`
}

// tally is a receiver that records each request's body and signature and
// the status it answered.
type tally struct {
	mu   sync.Mutex
	seen []seen
}

type seen struct {
	body      []byte
	signature string
	status    int
}

// serve starts an HTTP server that passes each request to handler and
// records it.
func (ta *tally) serve(t *testing.T, handler http.Handler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		handler.ServeHTTP(sw, r)
		ta.mu.Lock()
		ta.seen = append(ta.seen, seen{body, r.Header.Get(webhook.SignatureHeader), sw.status})
		ta.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (ta *tally) requests() []seen {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return append([]seen(nil), ta.seen...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func TestVerificationCheck(t *testing.T) {
	t.Parallel()
	accept := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		name     string
		receiver http.Handler
		// what the check must report
		sent     bool
		status   int // 0: none
		rejected bool
	}{
		{
			name:     "verifying receiver",
			receiver: webhook.Middleware(verifyToken, accept),
			sent:     true, status: http.StatusUnauthorized, rejected: true,
		},
		{
			name:     "receiver that ignores the signature",
			receiver: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
			sent:     true, status: http.StatusOK, rejected: false,
		},
		{
			// Rejecting a forgery proves nothing when the real sample is
			// rejected too: the check is not sent.
			name:     "receiver that rejects everything",
			receiver: webhook.Middleware("whsec_some_other_token", accept),
			sent:     false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := heraldtest.Start(t, heraldtest.Options{
				Transport: func(rt http.RoundTripper) http.RoundTripper { return openapitest.Transport(t, rt) },
			})
			rcv := new(tally)
			hook := createWebhook(t, h, rcv.serve(t, tc.receiver))

			var res testResult
			h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{"checkVerification": true}, &res)

			if res.Succeeded != tc.sent {
				t.Errorf("succeeded = %t; want %t", res.Succeeded, tc.sent)
			}
			vc := res.VerificationCheck
			if vc == nil {
				t.Fatal("verificationCheck = null; want a report")
			}
			if vc.Sent != tc.sent || vc.Rejected != tc.rejected {
				t.Errorf("verificationCheck sent %t, rejected %t; want sent %t, rejected %t", vc.Sent, vc.Rejected, tc.sent, tc.rejected)
			}
			switch {
			case tc.status == 0 && vc.StatusCode != nil:
				t.Errorf("verificationCheck.statusCode = %d; want null", *vc.StatusCode)
			case tc.status != 0 && (vc.StatusCode == nil || *vc.StatusCode != tc.status):
				t.Errorf("verificationCheck.statusCode = %v; want %d", deref(vc.StatusCode), tc.status)
			}
			if tc.sent == (vc.Error != nil) {
				t.Errorf("verificationCheck.error = %v; want one only when not sent", deref(vc.Error))
			}

			got := rcv.requests()
			want := 1
			if tc.sent {
				want = 2
			}
			if len(got) != want {
				t.Fatalf("receiver got %d requests; want %d", len(got), want)
			}
			if string(got[0].body) != res.Request.Body || got[0].signature != res.Request.Signature {
				t.Errorf("first request is not the signed sample the result shows")
			}
			if tc.sent {
				forged := got[1]
				if !bytes.Equal(forged.body, got[0].body) {
					t.Errorf("forged request body differs from the sample:\n%s\n%s", forged.body, got[0].body)
				}
				// Well-formed, so that a rejection is for the mismatch.
				if sig, err := base64.StdEncoding.DecodeString(forged.signature); err != nil || len(sig) != 32 {
					t.Errorf("forged signature %q is not base64 of 32 bytes", forged.signature)
				}
				if webhook.Verify(verifyToken, forged.body, forged.signature) == nil {
					t.Errorf("forged signature verifies under the webhook's token")
				}
				if forged.status != tc.status {
					t.Errorf("receiver answered the forgery %d; the check reports %d", forged.status, tc.status)
				}
			}

			if logs := h.Logs(""); len(logs) != 0 {
				t.Errorf("the Test left %d event logs; want none", len(logs))
			}
			if got := h.Webhook(hook.ID).Status; got != "Healthy" {
				t.Errorf("webhook %s after the Test; want Healthy", got)
			}
		})
	}
}

func TestVerificationCheckIsOptIn(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{
		Transport: func(rt http.RoundTripper) http.RoundTripper { return openapitest.Transport(t, rt) },
	})
	rcv := new(tally)
	hook := createWebhook(t, h, rcv.serve(t, webhook.Middleware(verifyToken, http.NotFoundHandler())))

	for _, body := range []any{nil, map[string]any{}, map[string]any{"checkVerification": false}} {
		var res testResult
		h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", body, &res)
		if res.VerificationCheck != nil {
			t.Errorf("body %v: verificationCheck = %+v; want null", body, *res.VerificationCheck)
		}
	}
	if n := len(rcv.requests()); n != 3 {
		t.Errorf("receiver got %d requests; want 3, no forged ones", n)
	}
}

// TestVerificationCheckLeavesAnUnhealthyWebhookUnhealthy: a Test's 2xx is
// not a delivery, so it does not restore health as a successful delivery or
// resend would.
func TestVerificationCheckLeavesAnUnhealthyWebhookUnhealthy(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1}})
	var down atomic.Bool
	down.Store(true)
	verifying := webhook.Middleware(verifyToken, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	rcv := new(tally)
	hook := createWebhook(t, h, rcv.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		verifying.ServeHTTP(w, r)
	})))
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the event to fail", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "failed"
	})
	if got := h.Webhook(hook.ID).Status; got != "Unhealthy" {
		t.Fatalf("webhook %s after a failed event; want Unhealthy", got)
	}

	down.Store(false)
	var res testResult
	h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{"checkVerification": true}, &res)
	if vc := res.VerificationCheck; !res.Succeeded || vc == nil || !vc.Rejected {
		t.Fatalf("succeeded %t, verificationCheck %+v; want the sample accepted and the forgery rejected", res.Succeeded, deref(vc))
	}

	if got := h.Webhook(hook.ID).Status; got != "Unhealthy" {
		t.Errorf("webhook %s after the Test; want Unhealthy still", got)
	}
	logs := h.Logs("webhookId=" + hook.ID)
	if len(logs) != 1 || logs[0].Status != "failed" || h.Log(logs[0].ID).AttemptCount != 1 {
		t.Errorf("logs %+v; want the one failed log, with its one attempt", logs)
	}
}

// createWebhook creates a webhook for license.created at url under
// verifyToken.
func createWebhook(t *testing.T, h *heraldtest.Herald, url string) heraldtest.Webhook {
	t.Helper()
	var hook heraldtest.Webhook
	h.Must(201, "POST", "/v3/webhooks", map[string]any{
		"name": "verification check", "url": url, "events": []string{"license.created"}, "token": verifyToken,
	}, &hook)
	return hook
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
