package openapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldhq/herald/internal/openapi"
	"github.com/heraldhq/herald/internal/openapitest"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDocumentValidates(t *testing.T) {
	t.Parallel()
	doc := load(t)
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("document does not validate: %v", err)
	}
	if got, want := doc.OpenAPI, "3.1.0"; got != want {
		t.Errorf("openapi = %q; want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		t.Fatalf("JSON() is not JSON: %v", err)
	}
	if got := doc["openapi"]; got != "3.1.0" {
		t.Errorf("openapi = %v; want 3.1.0", got)
	}
	if _, ok := doc["webhooks"]; !ok {
		t.Error("webhooks (the delivery format) is missing from the JSON")
	}
	a := openapi.JSON()
	a[0] = 'X'
	if b := openapi.JSON(); b[0] == 'X' {
		t.Error("JSON() returned a shared slice; want a fresh copy")
	}
}

type operation struct {
	method, path string
	op           *openapi3.Operation
	item         *openapi3.PathItem
}

func operations(doc *openapi3.T) []operation {
	var ops []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, operation{method, path, op, item})
		}
	}
	return ops
}

func (o operation) String() string { return o.method + " " + o.path }

func (o operation) responds(status int) bool {
	return o.op.Responses.Status(status) != nil
}

// TestOperationsConsistent checks the rules the API reference states once
// for all calls, so that a call added later cannot quietly break them.
func TestOperationsConsistent(t *testing.T) {
	t.Parallel()
	doc := load(t)
	if len(doc.Servers) == 0 || doc.Servers[0].URL != "/" {
		t.Errorf("servers = %v; want / first, the herald that serves the document", doc.Servers)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Fatalf("top-level security = %v; want bearerAuth", doc.Security)
	}
	public := map[string]bool{
		"GET /v3/openapi.json":              true,
		"GET /v3/event-types":               true,
		"GET /v3/event-types/{kind}/schema": true,
		"GET /v3/signing-keys":              true,
		"GET /healthz":                      true,
		"GET /readyz":                       true,
		"GET /metrics":                      true,
	}
	ids := map[string]string{}
	for _, o := range operations(doc) {
		if o.op.OperationID == "" || o.op.Summary == "" || len(o.op.Tags) == 0 {
			t.Errorf("%s: want an operationId, a summary and a tag", o)
		}
		if prev, ok := ids[o.op.OperationID]; ok {
			t.Errorf("%s: operationId %q already used by %s", o, o.op.OperationID, prev)
		}
		ids[o.op.OperationID] = o.String()

		isPublic := o.op.Security != nil && len(*o.op.Security) == 0
		if isPublic != public[o.String()] {
			t.Errorf("%s: needs no token = %v; want %v", o, isPublic, public[o.String()])
		}
		if !strings.HasPrefix(o.path, "/v3/") || isPublic {
			continue
		}
		if !o.responds(http.StatusUnauthorized) {
			t.Errorf("%s: want a 401 answer", o)
		}
		if !o.responds(http.StatusMethodNotAllowed) || o.op.Responses.Status(http.StatusMethodNotAllowed).Ref != "#/components/responses/MethodNotAllowed" {
			t.Errorf("%s: want the shared 405 answer (MethodNotAllowed, with Allow)", o)
		}
		if strings.Contains(o.path, "{") && !o.responds(http.StatusNotFound) {
			t.Errorf("%s: has a path id; want a 404 answer", o)
		}
		if o.op.RequestBody != nil {
			for _, s := range []int{400, 413, 415, 422} {
				if !o.responds(s) {
					t.Errorf("%s: takes a body; want a %d answer", o, s)
				}
			}
		}
		if o.method == http.MethodGet && !strings.Contains(o.path, "{") && o.path != "/v3/account" {
			params := o.op.Parameters
			if params.GetByInAndName("query", "limit") == nil || params.GetByInAndName("query", "cursor") == nil {
				t.Errorf("%s: is a list; want limit and cursor", o)
			}
			if !o.responds(http.StatusUnprocessableEntity) {
				t.Errorf("%s: is a list; want a 422 answer for bad query parameters", o)
			}
		}
		for code, ref := range o.op.Responses.Map() {
			for mt := range ref.Value.Content {
				want := "application/json"
				if code[0] == '4' {
					want = "application/problem+json"
				}
				if mt != want {
					t.Errorf("%s: answer %s is %s; want %s", o, code, mt, want)
				}
			}
		}
	}
}

// TestObjectSchemasClosed checks that every object schema with a fixed
// shape refuses fields it does not define.
func TestObjectSchemasClosed(t *testing.T) {
	t.Parallel()
	doc := load(t)
	// Maps whose keys the user chooses: metadata, a filter's paths, header
	// names.
	open := map[string]bool{"Metadata": true, "WebhookFilter": true, "WebhookHeaders": true}
	for name, ref := range doc.Components.Schemas {
		s := ref.Value
		if open[name] || !s.Type.Is("object") {
			continue
		}
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("schema %s: want additionalProperties: false", name)
		}
		for prop, p := range s.Properties {
			if p.Value.Type.Is("object") && len(p.Value.Properties) > 0 &&
				(p.Value.AdditionalProperties.Has == nil || *p.Value.AdditionalProperties.Has) {
				t.Errorf("schema %s, property %s: want additionalProperties: false", name, prop)
			}
		}
	}
}

func TestEventKinds(t *testing.T) {
	t.Parallel()
	doc := load(t)
	var got []string
	for _, v := range doc.Components.Schemas["EventKind"].Value.Enum {
		got = append(got, v.(string))
	}
	want := []string{
		"license.created", "license.updated", "license.renewed", "license.expiresAt.updated",
		"license.deleted", "license.first-activated", "activation.created", "activation.deleted",
		"license.expiring-soon", "license.expired",
		"product.created", "product.updated", "product.deleted",
		"user.created", "user.updated", "user.deleted",
		"release.created", "release.deleted",
		"trial-activation.created", "trial-activation.deleted",
		"webhook.unhealthy", "webhook.suspended", "webhook.recovered",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("EventKind = %v; want %v", got, want)
	}
}

// TestSchemaInstances pins down the shapes the document promises where a
// reader could misread it: which fields are nullable, where attempts appear,
// what a problem carries.
func TestSchemaInstances(t *testing.T) {
	t.Parallel()
	doc := load(t)
	const (
		id   = "01937a4e-8f2b-7c3d-9e4f-5a6b7c8d9e0f"
		when = "2026-11-21T08:07:13.120Z"
	)
	eventLog := func(extra string) string {
		return `{"id":"` + id + `","webhookId":"` + id + `","eventId":"` + id + `","event":"license.created",
			"status":"queued","payload":"{}","statusCode":null,"sentAt":null,"receivedAt":null,
			"retryReason":null,"attemptCount":0,"nextAttemptAt":"` + when + `","holding":false,"createdAt":"` + when + `",
			"updatedAt":"` + when + `"` + extra + `}`
	}
	attempt := `{"number":1,"trigger":"automatic","sentAt":"` + when + `","receivedAt":null,"statusCode":null,
		"durationMs":15000,"error":"timed out after 15s","responseBody":"","headers":{"request":[{"name":"webhook-signature","value":"c2ln"}],"response":[],"omitted":0}}`
	testResultPublished := func(response, published, check string) string {
		return `{"event":"license.created","request":{"url":"https://example.com/h","headers":{"webhook-id":"` + id + `"},
			"body":"{}","signature":"c2ln"},"response":` + response + `,"published":` + published + `,"error":null,"succeeded":true,
			"verificationCheck":` + check + `,"signedWith":"current"}`
	}
	testResult := func(response, check string) string { return testResultPublished(response, "null", check) }
	tests := []struct {
		schema, value string
		ok            bool
	}{
		{"EventLog", eventLog(""), true},
		{"EventLog", eventLog(`,"attempts":[]`), false},
		{"EventLogWithAttempts", eventLog(`,"attempts":[` + attempt + `]`), true},
		{"EventLogWithAttempts", eventLog(""), false},
		{"EventLogWithAttempts", eventLog(`,"attempts":[` + strings.Replace(attempt, `"headers":{`, `"headers":null,"x":{`, 1) + `]`), false},
		{"Attempt", attempt[:strings.Index(attempt, `"headers"`)] + `"headers":null}`, true},
		{"Attempt", strings.Replace(attempt, `"omitted":0`, `"omitted":-1`, 1), false},
		{"Attempt", strings.Replace(attempt, `"response":[]`, `"response":[{"name":"x"}]`, 1), false},
		{"EventLog", eventLog(`,"extra":1`), false},
		{"WebhookTestResult", testResult("null", "null"), true},
		{"WebhookTestResult", testResult(`{"statusCode":204,"headers":{},"body":"","durationMs":12}`,
			`{"sent":true,"statusCode":401,"rejected":true,"error":null}`), true},
		{"WebhookTestResult", testResult(`{"statusCode":204}`, "null"), false},
		{"WebhookTestResult", testResultPublished("null", `{"answer":"confirmed by RabbitMQ","durationMs":3}`, "null"), true},
		{"WebhookTestResult", testResultPublished("null", `{"answer":"confirmed by RabbitMQ"}`, "null"), false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","createdAt":"` + when + `","updatedAt":"` + when + `","token":"0123456789abcdef"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":null,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, true},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":{"data.plan":"pro"},"headers":{"X-Api-Key":"********"},"signatureScheme":"standard-webhooks","rateLimit":50,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, true},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"svix","rateLimit":null,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":0,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":10001,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":null,"retryPolicy":{"maxAttempts":31,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null,"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":null,"retryPolicy":{"maxAttempts":5,"backoff":"linear","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":{"startedAt":"` + when + `","endsAt":"` + when + `"},"filter":null,"headers":{},"signatureScheme":"herald","rateLimit":null,"retryPolicy":{"maxAttempts":5,"backoff":"fixed","intervalSeconds":300,"maxIntervalSeconds":300},"type":"http"}`, true},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","undeliveredCount":0,"createdAt":"` + when + `","updatedAt":"` + when + `"}`, false},
		{"Webhook", `{"id":"` + id + `","name":"n","url":"https://e.com","events":["user.created"],"enabled":true,
			"status":"Healthy","createdAt":"` + when + `","updatedAt":"` + when + `","tokenRotation":null}`, false},
		{"TokenRotationRequest", `{"overlapSeconds":60}`, true},
		{"TokenRotationRequest", `{"overlapSeconds":59}`, false},
		{"TokenRotationRequest", `{"overlapSeconds":2592001}`, false},
		{"WebhookToken", `{"token":"0123456789abcdef","nextToken":null}`, true},
		{"WebhookToken", `{"token":"0123456789abcdef","nextToken":"fedcba9876543210"}`, true},
		{"WebhookTestRequest", `{"signWith":"old"}`, false},
		{"ValidationProblem", `{"type":"https://herald.dev/problems/validation","title":"Validation failed","status":422,"detail":"d","errors":[]}`, false},
		{"ValidationProblem", `{"type":"https://herald.dev/problems/validation","title":"Validation failed","status":422,"detail":"d","errors":[{"field":"name","detail":"d"}]}`, true},
		{"Problem", `{"type":"about:blank","title":"Not found","status":404,"detail":"d"}`, true},
		{"Problem", `{"type":"about:blank","title":"Not found","status":404}`, false},
		{"WebhookUpdate", `{}`, false},
		{"LicenseExpiresAtUpdate", `{"expiresAt":null}`, true},
		{"LicenseExpiresAtUpdate", `{}`, false},
		{"LicenseCreate", `{"productId":"` + id + `","key":"bad key!"}`, false},
		{"WebhookCreate", `{"name":"n","url":"ftp://e.com","events":["license.created"]}`, false},
		{"WebhookCreate", `{"name":"n","url":"https://e.com","events":["license.created","license.created"]}`, false},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.value), &v); err != nil {
			t.Fatalf("%s: bad test value: %v", tt.schema, err)
		}
		ref := doc.Components.Schemas[tt.schema]
		if ref == nil {
			t.Fatalf("no schema %s", tt.schema)
		}
		err := ref.Value.VisitJSON(v, openapi3.MultiErrors())
		if (err == nil) != tt.ok {
			t.Errorf("%s accepts %s = %v; want %v (%v)", tt.schema, tt.value, err == nil, tt.ok, err)
		}
	}
}
