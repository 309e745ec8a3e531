// Package openapitest checks an API's HTTP traffic against herald's API
// reference (package openapi), so that the document and the handlers cannot
// drift apart unnoticed.
//
// The API's integration tests wrap their client's transport with [Transport].
// Every request under /v3 is then matched to an operation of the document,
// and every answer is checked against that operation: status, content type,
// headers and body. Requests are checked too, but a test may send bad input
// on purpose, so a request that breaks the document fails the test only when
// herald accepted it (answered 2xx); otherwise it is logged.
//
// On top of the document's schemas, answers are held to herald's rendering
// rules: ids are lowercase UUIDs and times are UTC with exactly three
// fractional digits and Z (2026-11-21T08:07:13.120Z). Requests may use any
// UUID casing and any RFC 3339 time.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/heraldhq/herald/internal/openapi"
)

// prefix is the path prefix of the calls that [Transport] checks. Other
// requests (the portal, receivers, /healthz) pass through unchecked.
const prefix = "/v3"

// maxShown caps how much of a body a failure message quotes.
const maxShown = 2048

// Load parses the API reference (the JSON that herald serves) with
// kin-openapi and resolves its references, for tests that inspect the
// document. Each call returns a new *openapi3.T that the caller may change.
// Load does not validate the document; package openapi's tests do.
func Load() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON())
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	return doc, nil
}

// loadRouter loads, validates and routes the document once per test binary.
// The document and router are only read afterwards, so tests share them.
var loadRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate openapi document: %w", err)
	}
	// Match any host: tests run herald on httptest servers.
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route openapi document: %w", err)
	}
	return r, nil
})

// loadStrict compiles the document's schemas for the strict check once per
// test binary; compiled schemas are safe for concurrent use.
var loadStrict = sync.OnceValues(func() (*strictSchemas, error) {
	return newStrictSchemas(openapi.JSON())
})

// Transport returns a RoundTripper that sends each request through base
// (http.DefaultTransport when nil) and checks each request under /v3, and
// its answer, against herald's API document. It reports through t.Errorf:
//
//   - a request to a method and path the document does not define;
//   - an answer that does not match the operation: an undocumented status,
//     a wrong content type, a missing header, a body that breaks the schema,
//     a body where none is documented;
//   - a request that breaks the document but was answered 2xx.
//
// Bodies are checked twice: by kin-openapi, which reads the document
// leniently, and by a strict JSON Schema 2020-12 validator (see
// strictSchemas), so that what a strict client or validator would refuse
// fails here too.
//
// A request that breaks the document and was answered with an error is
// only logged (t.Logf): tests send bad input on purpose. Bodies are
// buffered, so the server and the caller read them as usual.
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	router, err := loadRouter()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	strict, err := loadStrict()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base, router: router, strict: strict}
}

type transport struct {
	t      testing.TB
	base   http.RoundTripper
	router routers.Router
	strict *strictSchemas
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != prefix && !strings.HasPrefix(req.URL.Path, prefix+"/") {
		return tr.base.RoundTrip(req)
	}
	reqBody, err := drain(req.Body)
	if err != nil {
		return nil, fmt.Errorf("openapitest: read request body: %w", err)
	}
	sent := withBody(req, reqBody)
	resp, err := tr.base.RoundTrip(sent)
	if err != nil {
		return nil, err
	}
	respBody, err := drain(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return nil, fmt.Errorf("openapitest: read response body: %w", err)
	}
	tr.check(withBody(req, reqBody), resp, respBody)
	return resp, nil
}

// check reports what in the exchange breaks the document.
func (tr *transport) check(req *http.Request, resp *http.Response, respBody []byte) {
	call := fmt.Sprintf("%s %s", req.Method, req.URL.RequestURI())
	route, params, err := tr.router.FindRoute(req)
	if err != nil {
		tr.t.Errorf("openapitest: %s: not in the API document (%v); answered %d", call, err, resp.StatusCode)
		return
	}
	ctx := req.Context()
	reqOpts := &openapi3filter.Options{
		MultiError:              true,
		SkipSettingDefaults:     true,
		AuthenticationFunc:      anyBearer,
		SchemaValidationOptions: requestFormats,
	}
	reqOpts.WithCustomSchemaErrorFunc(schemaMessage)
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options:    reqOpts,
	}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			tr.t.Errorf("openapitest: %s: answered %d to a request the API document rejects: %v", call, resp.StatusCode, err)
		} else {
			tr.t.Logf("openapitest: %s: request breaks the API document (answered %d, as it should): %v", call, resp.StatusCode, err)
		}
	} else if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Only what kin-openapi let pass, so that a request is reported once.
		if err := tr.checkStrictRequest(route, req); err != nil {
			tr.t.Errorf("openapitest: %s: answered %d to a request the strict check rejects: %v", call, resp.StatusCode, err)
		}
	}
	if route.Operation.Responses.Status(resp.StatusCode) == nil && route.Operation.Responses.Default() == nil {
		tr.t.Errorf("openapitest: %s: answer %d is not documented for this call\nbody: %s", call, resp.StatusCode, shown(respBody))
		return
	}
	respOpts := &openapi3filter.Options{
		MultiError:              true,
		IncludeResponseStatus:   true,
		SchemaValidationOptions: responseFormats,
	}
	respOpts.WithCustomSchemaErrorFunc(schemaMessage)
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                respOpts,
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		tr.t.Errorf("openapitest: %s: answer %d does not match the API document: %v\nbody: %s", call, resp.StatusCode, err, shown(respBody))
		return
	}
	if err := checkNoBody(route, resp.StatusCode, respBody); err != nil {
		tr.t.Errorf("openapitest: %s: answer %d does not match the API document: %v\nbody: %s", call, resp.StatusCode, err, shown(respBody))
	}
	ct := resp.Header.Get("Content-Type")
	if !isJSON(ct) || len(respBody) == 0 {
		return
	}
	if ptr, ok := tr.strict.responseSchema(route.Method, route.Path, resp.StatusCode, ct); ok {
		if err := tr.strict.check(ptr, respBody); err != nil {
			tr.t.Errorf("openapitest: %s: answer %d fails the strict check: %v\nbody: %s", call, resp.StatusCode, err, shown(respBody))
		}
	}
}

// checkStrictRequest holds an accepted request's JSON body to the strict
// reading of the document.
func (tr *transport) checkStrictRequest(route *routers.Route, req *http.Request) error {
	ct := req.Header.Get("Content-Type")
	// GetBody, not Body: kin-openapi reads Body after this.
	rc, err := req.GetBody()
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	body, err := drain(rc)
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	if !isJSON(ct) || len(body) == 0 {
		return nil
	}
	ptr, ok := tr.strict.requestSchema(route.Method, route.Path, ct)
	if !ok {
		return nil
	}
	return tr.strict.check(ptr, body)
}

// checkNoBody reports a body on an answer the document gives no content,
// which kin-openapi lets pass.
func checkNoBody(route *routers.Route, status int, body []byte) error {
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil || len(ref.Value.Content) > 0 || len(body) == 0 {
		return nil
	}
	return fmt.Errorf("status %d is documented without a body, got %d bytes", status, len(body))
}

// schemaMessage says where a value breaks the schema and why, quoting the
// value but not the schema (which the document already shows).
func schemaMessage(err *openapi3.SchemaError) string {
	v, _ := json.Marshal(err.Value)
	return fmt.Sprintf("at /%s: %s (value: %s)", strings.Join(err.JSONPointer(), "/"), err.Reason, clip(v, 200))
}

// anyBearer accepts any bearer token: the API checks tokens, the document
// only says that one must be sent.
func anyBearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s == nil || s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return in.NewError(fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName))
	}
	scheme, token, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(errors.New("no bearer token in the Authorization header"))
	}
	return nil
}

// drain reads and closes body, which may be nil.
func drain(body io.ReadCloser) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	defer body.Close()
	return io.ReadAll(body)
}

// withBody returns a copy of req that reads body.
func withBody(req *http.Request, body []byte) *http.Request {
	c := req.Clone(req.Context())
	if body == nil {
		c.Body = http.NoBody
		c.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return c
	}
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c
}

func shown(b []byte) string { return clip(b, maxShown) }

// clip cuts b to about n bytes, at a character boundary.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:cut], len(b))
}
