package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/webhook"
)

// DialFunc dials a receiver; the caller's policy decides which addresses it
// may reach.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Sender makes one POST of a signed body. It follows no redirect and uses no
// proxy from the environment, so the dial policy sees every address.
type Sender struct {
	client    *http.Client
	dest      Destinations // publishes a destination's attempts; nil: they fail
	timeout   time.Duration
	userAgent string
	now       func() time.Time // stamps SentAt and ReceivedAt
	// routes are webhooks' own ways to their receivers (reach.go); nil
	// sends every request the plain way.
	routes *routes
}

// NewSender returns a Sender whose attempts time out after timeout.
func NewSender(timeout time.Duration, dial DialFunc, userAgent string) *Sender {
	return newSender(timeout, dial, userAgent, time.Now)
}

// newSender is NewSender on the dispatcher's clock.
func newSender(timeout time.Duration, dial DialFunc, userAgent string, now func() time.Time) *Sender {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          2048,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 0,
		// No Accept-Encoding of Go's own: the request carries exactly the
		// headers herald shows in a Test result, and a receiver's answer is
		// kept as it sent it.
		DisableCompression: true,
		// A receiver chooses its answer's headers; Go would read up to 10 MiB
		// of them per attempt, gigabytes across hundreds in flight.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	return &Sender{
		client:    &http.Client{Transport: tr, CheckRedirect: noRedirects},
		routes:    &routes{base: tr, now: now},
		timeout:   timeout,
		userAgent: userAgent,
		now:       now,
	}
}

// MaxResponseHeaderBytes bounds the header bytes read from a receiver's
// answer (status line included). Real receivers send well under 8 KiB; an
// answer over the bound fails the attempt with a reason that says so.
const MaxResponseHeaderBytes = 32 << 10

// Request is one delivery to make.
type Request struct {
	// WebhookID and Kind name the webhook and the event's kind, for a
	// destination's attempt (destination.go).
	WebhookID string
	Kind      string
	URL       string
	EventID   string
	Body      []byte
	Signature string
	// NextSignature, during a token rotation, is the body's signature under
	// the next token, sent in webhook-signature-next; "" sends no such header.
	NextSignature string
	// Headers are the webhook's custom headers (checked when saved never to
	// name one of herald's own), sent as given.
	Headers map[string]string
	// StandardTokens, when set, sign the request the Standard Webhooks way
	// instead of Signature and NextSignature: the token that signs now and,
	// during a rotation, the next one, each signature in the one
	// webhook-signature header, over id.timestamp.body with the timestamp
	// of the moment it is sent.
	StandardTokens []string
	// Ed25519, set with StandardTokens, says they are "whsk_" private keys
	// that sign "v1a," signatures rather than "v1," secrets.
	Ed25519 bool
	// via is the webhook's own way to its receiver (reach.go); nil is the
	// plain one.
	via *route
	// license is the license the event concerns, read from the full body
	// before a thin one replaced it: a destination keys its message by it.
	license string
	// logID is the log the request attempts ("" for a Test): one webhook's
	// copy of the event, which a broker that deduplicates knows it by.
	logID string
	// resend says a person asked for the event again (a resend, a
	// recovery's): a broker that deduplicates must not take it for a retry
	// of what it already took (destination.Message.DedupID).
	resend bool
	// fail, when not "", is why the request cannot be made: sent, it
	// fails at once with this reason.
	fail, failure string
}

// request is the signed request for a claim, made as its webhook asks:
// the thin body when it wants one (signed as sent), over its own client
// and with its OAuth2 token when it has them.
func (s *Sender) request(ctx context.Context, c attempt.Claim) Request {
	rt, err := s.routes.get(ctx, c.WebhookID)
	if err != nil {
		return Request{URL: c.URL, EventID: c.EventID, fail: err.Error(), failure: "connection"}
	}
	license := ""
	if rt.thin {
		// A thin activation event names no license: the key is read now.
		license = destination.LicenseOf(c.Event, c.Body)
		body, err := event.Thin(c.Body)
		if err != nil {
			return Request{URL: c.URL, EventID: c.EventID, fail: err.Error(), failure: "invalid_body"}
		}
		c.Body = body
	}
	r := signed(c)
	r.via, r.license = rt, license
	if rt.fail != "" {
		r.fail, r.failure = rt.fail, "tls"
	}
	return r
}

// signed returns the request for a claim's body, signed with the tokens of
// the claim's moment.
func signed(c attempt.Claim) Request {
	r := Request{WebhookID: c.WebhookID, Kind: c.Event, URL: c.URL, EventID: c.EventID, logID: c.LogID, Body: c.Body, Headers: c.Headers}
	if c.SignatureScheme == attempt.SchemeStandardWebhooks || c.SignatureScheme == attempt.SchemeStandardEd25519 {
		r.StandardTokens, r.Ed25519 = []string{c.Token}, c.SignatureScheme == attempt.SchemeStandardEd25519
		if c.NextToken != "" {
			r.StandardTokens = append(r.StandardTokens, c.NextToken)
		}
		return r
	}
	r.Signature = webhook.Sign(c.Token, c.Body)
	if c.NextToken != "" {
		r.NextSignature = webhook.Sign(c.NextToken, c.Body)
	}
	return r
}

// Result is what one POST saw.
type Result struct {
	Headers    http.Header // the request headers as sent
	SentAt     time.Time
	ReceivedAt *time.Time
	StatusCode *int
	RespHeader http.Header
	RespBody   []byte
	Duration   time.Duration
	Err        string // why it failed; "" when it succeeded
	// Failure is Err's kind, one of a few fixed words (for metrics):
	// timeout, connection, address_refused, headers_too_large, redirect,
	// status, invalid_url, signing_key, tls, oauth2, invalid_body; "" when
	// it succeeded.
	Failure string
	// RetryAfter is how long a 429 or 503 answer's Retry-After header asked
	// to wait (delay-seconds, or an HTTP date less the moment it came);
	// nil when there was none, or it was malformed, or the answer was
	// another. What it does to the next attempt is the dispatcher's call.
	RetryAfter *time.Duration
}

// OK reports a 2xx.
func (r Result) OK() bool { return r.Err == "" }

// Send POSTs the body as is. Any 2xx within the time-out succeeds; anything
// else, a redirect included, fails with a reason a person can act on.
func (s *Sender) Send(ctx context.Context, req Request) Result {
	if req.fail != "" {
		return Result{SentAt: s.now(), Err: req.fail, Failure: req.failure}
	}
	if typ, ok := destination.TypeOf(req.URL); ok {
		return s.publish(ctx, typ, req)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	client, bearer := s.client, ""
	if req.via != nil && req.via.client != nil {
		client = req.via.client
	}
	if req.via != nil && req.via.tokens != nil {
		var err error
		if bearer, err = req.via.tokens.token(ctx); err != nil {
			return Result{SentAt: s.now(), Err: "OAuth2 token not fetched: " + err.Error(), Failure: "oauth2"}
		}
	}
	res := s.sendOnce(ctx, client, req, bearer)
	// A receiver that refuses the token (revoked, or its key rotated
	// before the token's expiry) is asked once more with a new one.
	if bearer != "" && res.StatusCode != nil && *res.StatusCode == http.StatusUnauthorized {
		fresh, err := req.via.tokens.refetch(ctx, bearer)
		if err != nil {
			res.Err = "receiver answered 401; OAuth2 token not fetched again: " + err.Error()
			return res
		}
		res = s.sendOnce(ctx, client, req, fresh)
	}
	return res
}

// sendOnce makes the POST, with bearer in its Authorization header when
// it is not "".
func (s *Sender) sendOnce(ctx context.Context, client *http.Client, req Request, bearer string) Result {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Result{SentAt: s.now(), Err: "invalid URL: " + err.Error(), Failure: "invalid_url"}
	}
	hr.ContentLength = int64(len(req.Body))
	// Set as the specification spells them; Go would otherwise canonicalise
	// webhook-signature to Webhook-Signature. Receivers read them in any case.
	hr.Header = http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"Content-Length":        {strconv.Itoa(len(req.Body))},
		webhook.SignatureHeader: {req.Signature},
		webhook.IDHeader:        {req.EventID},
		"User-Agent":            {s.userAgent},
	}
	shown, failed := s.sign(req, hr.Header)
	if failed != nil {
		return *failed
	}
	if bearer != "" {
		hr.Header["Authorization"] = []string{"Bearer " + bearer}
		shown["Authorization"] = []string{"Bearer " + attempt.MaskedHeaderValue}
	}
	res := Result{Headers: shown, SentAt: s.now()}
	resp, err := client.Do(hr)
	if err != nil {
		res.Duration = s.now().Sub(res.SentAt)
		res.Err, res.Failure = describe(err, s.timeout)
		return res
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, attempt.MaxResponseBody))
	// Drain a little more so the connection can be reused, then close.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 256<<10))
	resp.Body.Close()
	now := s.now()
	code := resp.StatusCode
	res.ReceivedAt, res.StatusCode, res.RespHeader, res.RespBody = &now, &code, resp.Header, body
	res.Duration = now.Sub(res.SentAt)
	switch {
	case readErr != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Err, res.Failure = fmt.Sprintf("timed out after %s reading the response", s.timeout), "timeout"
	case code >= 200 && code < 300:
	case code >= 300 && code < 400:
		res.Err, res.Failure = fmt.Sprintf("receiver answered %d redirect to %q; redirects are not followed", code, resp.Header.Get("Location")), "redirect"
	default:
		res.Err, res.Failure = fmt.Sprintf("receiver answered %d", code), "status"
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
		}
	}
	return res
}

// sign adds the signature's headers and the custom headers to header, and
// returns what is kept and shown of them. failed, when not nil, is the
// attempt's result: the key could not sign.
func (s *Sender) sign(req Request, header http.Header) (shown http.Header, failed *Result) {
	if req.NextSignature != "" {
		header[webhook.NextSignatureHeader] = []string{req.NextSignature}
	}
	if len(req.StandardTokens) > 0 {
		ts := s.now().Unix()
		sigs := make([]string, len(req.StandardTokens))
		for i, tok := range req.StandardTokens {
			if !req.Ed25519 {
				sigs[i] = webhook.SignStandard(tok, req.EventID, ts, req.Body)
				continue
			}
			// The validator lets no other token be saved for the scheme.
			priv, ok := webhook.ParsePrivateKey(tok)
			if !ok {
				return nil, &Result{SentAt: s.now(), Err: "the webhook's signing key is not an ed25519 private key: set a new token", Failure: "signing_key"}
			}
			sigs[i] = webhook.SignStandardEd25519(priv, req.EventID, ts, req.Body)
		}
		header[webhook.TimestampHeader] = []string{strconv.FormatInt(ts, 10)}
		header[webhook.SignatureHeader] = []string{strings.Join(sigs, " ")}
	}
	// What is kept and shown of the request (the attempt's headers, a Test
	// result) has the custom headers' values masked: they are often
	// credentials, kept sealed, never in the clear in a log.
	shown = header.Clone()
	for name, value := range req.Headers {
		if _, own := header[name]; own { // never herald's own, whatever was stored
			continue
		}
		header[name] = []string{value}
		shown[name] = []string{attempt.MaskedHeaderValue}
	}
	return shown, nil
}

// retryAfter reads a Retry-After header (RFC 9110, section 10.2.3): a
// number of seconds, or an HTTP date, which is read as the wait from now
// (none when it has passed). Anything else is ignored (nil). A number too
// large to read is the longest wait there is; the dispatcher caps it.
func retryAfter(v string, now time.Time) *time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	var d time.Duration
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n > int64(math.MaxInt64/time.Second):
			d = math.MaxInt64
		default:
			d = time.Duration(n) * time.Second
		}
		return &d
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return nil
	}
	d = max(0, at.Sub(now))
	return &d
}

// describe says why a request failed, and the kind of failure.
func describe(err error, timeout time.Duration) (reason, kind string) {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timed out after %s with no response", timeout), "timeout"
	}
	if msg := err.Error(); strings.Contains(msg, "server response headers exceeded") || // HTTP/1
		strings.Contains(msg, "response header list larger than advertised limit") { // HTTP/2
		// Go's own words name neither the receiver nor the bound in KiB.
		return fmt.Sprintf("receiver's response headers exceed %d KiB; the answer was not read", MaxResponseHeaderBytes>>10), "headers_too_large"
	}
	kind = "connection"
	if errors.Is(err, netguard.ErrBlocked) {
		kind = "address_refused"
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	return "request failed: " + err.Error(), kind
}
