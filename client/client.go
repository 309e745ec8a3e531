// Package client is herald's REST API (/v3) as Go calls: webhooks, event
// logs, the account and the licensing resources whose changes fire events.
// Every call takes a context, sends the API token as a bearer token, and
// returns the answer decoded, or an *Error carrying the RFC 9457 problem
// herald answered with (its status, the fields it names, and the request id
// an operator can find in herald's log).
//
// The herald command line (`herald webhooks`, `herald logs`, `herald
// trigger`) is built on it, and so are herald's own integration tests.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one herald with one API token. Its zero value is not usable;
// make one with New.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the herald at baseURL (such as
// http://127.0.0.1:8080) that authenticates with token. With hc nil it uses
// an http.Client with a 60 s time-out: a Test or a Resend waits for the
// receiver, up to herald's attempt time-out.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: hc}
}

// BaseURL is the address of the herald the client calls.
func (c *Client) BaseURL() string { return c.base }

// Error is an answer of 400 or more: herald's problem details.
type Error struct {
	Status    int          `json:"status"`
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Detail    string       `json:"detail"`
	Errors    []FieldError `json:"errors,omitempty"` // the fields a 422 refused
	RequestID string       `json:"-"`                // the answer's X-Request-Id
	// RetryAfter is the answer's Retry-After (a 429, or a 503 while the
	// database is unreachable or its disk full), or 0.
	RetryAfter time.Duration `json:"-"`
}

// FieldError names one refused field and why.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, cmpOr(e.Title, http.StatusText(e.Status)))
	// A validation problem's detail already sums up its fields.
	if len(e.Errors) == 0 && e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	for i, f := range e.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s: %s", sep, f.Field, f.Detail)
	}
	return b.String()
}

// IsStatus reports whether err is an answer with this status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// do sends a JSON request (in nil: no body) and decodes a 2xx answer into
// out (nil: the answer is dropped).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key, ok := ctx.Value(idempotencyKey{}).(string); ok && method == http.MethodPost {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
		if json.Unmarshal(answer, e) != nil || e.Status == 0 {
			e.Status, e.Detail = resp.StatusCode, strings.TrimSpace(string(answer))
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	}
	if raw, ok := ctx.Value(answerKey{}).(*[]byte); ok {
		*raw = answer
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

type idempotencyKey struct{}

type answerKey struct{}

// WithAnswer makes the calls made with the returned context keep the body
// of their latest successful answer in *raw, byte for byte as herald sent
// it (empty for a 204): for a program that shows the API's own answer, as
// `herald ... --json` does, rather than the decoded fields.
func WithAnswer(ctx context.Context, raw *[]byte) context.Context {
	return context.WithValue(ctx, answerKey{}, raw)
}

// WithIdempotencyKey makes the POSTs called with the returned context carry
// key as their Idempotency-Key: herald answers a repeat of the same call with
// the same key within 24 hours with the first answer, and changes nothing
// (no second license, no second event). Use one key per intended change, and
// the same key when retrying it after a time-out or a crash.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// Page is one page of a list; NextCursor, when not empty, asks for the next
// one (with the same filters).
type Page[T any] struct {
	Data       []T    `json:"data"`
	NextCursor string `json:"nextCursor"`
}

// ListOptions pages through a list: Limit 1 to 500 (0: herald's 50).
type ListOptions struct {
	Limit  int
	Cursor string
}

func (o ListOptions) values() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

func esc(id string) string { return url.PathEscape(id) }

// Raw makes one API call with body sent as it is (nil: no body) and returns
// the answer as herald sent it (nil for a 204): for a program that passes a
// resource's fields through rather than builds them, as `herald products
// create --data` does. path starts with /v3/; q may be nil. A refusal is an
// *Error, as from every other call.
func (c *Client) Raw(ctx context.Context, method, path string, q url.Values, body json.RawMessage) (json.RawMessage, error) {
	var in any
	if body != nil {
		in = body
	}
	var out json.RawMessage
	if err := c.do(ctx, method, path, q, in, &out); err != nil {
		return nil, err
	}
	return out, nil
}
