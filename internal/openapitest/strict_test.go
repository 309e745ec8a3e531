package openapitest

import (
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldhq/herald/internal/openapi"
)

// miniDocument holds, beside fixed ones, the shapes a lenient validator
// lets pass: WebhookTestResult.response as the reference wrote it before
// (nullable beside allOf, with no type), and others whose null or extra
// field OpenAPI 3.0.3 refuses.
const miniDocument = `{
  "openapi": "3.0.3",
  "info": {"title": "mini", "version": "1"},
  "paths": {
    "/r": {"get": {"responses": {
      "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Fixed"}}}},
      "404": {"$ref": "#/components/responses/Missing"}
    }}}
  },
  "components": {
    "responses": {
      "Missing": {"description": "no", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Answer"}}}}
    },
    "schemas": {
      "Answer": {"type": "object", "additionalProperties": false, "required": ["statusCode"],
        "properties": {"statusCode": {"type": "integer", "minimum": 100, "exclusiveMaximum": true, "maximum": 600}}},
      "Old": {"type": "object", "required": ["response"], "properties": {
        "response": {"nullable": true, "allOf": [{"$ref": "#/components/schemas/Answer"}]}}},
      "Fixed": {"type": "object", "required": ["response"], "properties": {
        "response": {"type": "object", "nullable": true, "additionalProperties": false,
          "properties": {"statusCode": {"type": "integer"}}}}},
      "NullableEnum": {"type": "string", "nullable": true, "enum": ["a"]},
      "RefSibling": {"type": "object", "properties": {
        "answer": {"$ref": "#/components/schemas/Answer", "nullable": true}}}
    }
  }
}`

// TestStrictRejectsWhatKinAccepts proves that the strict check can fail
// where kin-openapi passes: the reference's old nullable without a type
// refused a real null answer under OpenAPI 3.0.3, and only this check sees
// it.
func TestStrictRejectsWhatKinAccepts(t *testing.T) {
	t.Parallel()
	st, err := newStrictSchemas([]byte(miniDocument))
	if err != nil {
		t.Fatal(err)
	}
	kinDoc, err := openapi3.NewLoader().LoadFromData([]byte(miniDocument))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		schema, value string
		strict, kin   bool // whether each accepts the value
	}{
		{"Old", `{"response":null}`, false, true},
		{"Old", `{"response":{"statusCode":204}}`, true, true},
		{"Fixed", `{"response":null}`, true, true},
		{"Fixed", `{"response":{"statusCode":204}}`, true, true},
		{"Fixed", `{"response":{"statusCode":204,"extra":1}}`, false, false},
		{"NullableEnum", `"a"`, true, true},
		{"NullableEnum", `null`, false, true},
		{"RefSibling", `{"answer":null}`, false, false},
		{"Answer", `{"statusCode":599}`, true, true},
		{"Answer", `{"statusCode":600}`, false, false},
	}
	for _, tt := range tests {
		err := st.check("/components/schemas/"+tt.schema, []byte(tt.value))
		if got := err == nil; got != tt.strict {
			t.Errorf("strict: %s accepts %s = %v; want %v (%v)", tt.schema, tt.value, got, tt.strict, err)
		}
		var v any
		if err := json.Unmarshal([]byte(tt.value), &v); err != nil {
			t.Fatal(err)
		}
		kinErr := kinDoc.Components.Schemas[tt.schema].Value.VisitJSON(v)
		if got := kinErr == nil; got != tt.kin {
			t.Errorf("kin-openapi: %s accepts %s = %v; want %v (%v)", tt.schema, tt.value, got, tt.kin, kinErr)
		}
	}
}

// TestStrictFindsSchemas checks which schema an answer or request is held
// to, shared responses followed.
func TestStrictFindsSchemas(t *testing.T) {
	t.Parallel()
	st, err := newStrictSchemas(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		status       int // 0: the request body
		contentType  string
		want         string // "" when no schema applies
	}{
		{"GET", "/v3/webhooks/{id}", 200, "application/json", "/paths/~1v3~1webhooks~1{id}/get/responses/200/content/application~1json/schema"},
		{"GET", "/v3/webhooks/{id}", 404, "application/problem+json", "/components/responses/NotFound/content/application~1problem+json/schema"},
		{"PUT", "/v3/webhooks", 405, "application/problem+json", ""},
		{"GET", "/v3/webhooks", 405, "application/problem+json", "/components/responses/MethodNotAllowed/content/application~1problem+json/schema"},
		{"DELETE", "/v3/webhooks/{id}", 204, "application/json", ""},
		{"GET", "/v3/webhooks/{id}", 200, "text/plain", ""},
		{"POST", "/v3/webhooks", 0, "application/json; charset=utf-8", "/paths/~1v3~1webhooks/post/requestBody/content/application~1json/schema"},
		{"GET", "/v3/webhooks", 0, "application/json", ""},
	}
	for _, tt := range tests {
		var got string
		var ok bool
		if tt.status == 0 {
			got, ok = st.requestSchema(tt.method, tt.path, tt.contentType)
		} else {
			got, ok = st.responseSchema(tt.method, tt.path, tt.status, tt.contentType)
		}
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s %s %d %s: got %q, %v; want %q", tt.method, tt.path, tt.status, tt.contentType, got, ok, tt.want)
		}
	}
}

// TestStrictReference holds instances of the reference's own schemas to
// the strict reading: the nulls herald really answers pass, and what the
// reference rules out fails.
func TestStrictReference(t *testing.T) {
	t.Parallel()
	st, err := newStrictSchemas(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	const (
		id   = "01937a4e-8f2b-7c3d-9e4f-5a6b7c8d9e0f"
		when = "2026-11-21T08:07:13.120Z"
	)
	testResultPublished := func(response, published, check string) string {
		return `{"event":"license.created","request":{"url":"https://example.com/h","headers":{"webhook-id":"` + id + `"},
			"body":"{}","signature":"c2ln"},"response":` + response + `,"published":` + published + `,"error":null,"succeeded":false,
			"verificationCheck":` + check + `,"signedWith":"current"}`
	}
	testResult := func(response, check string) string { return testResultPublished(response, "null", check) }
	eventLog := func(extra string) string {
		return `{"id":"` + id + `","webhookId":"` + id + `","eventId":"` + id + `","event":"license.created",
			"status":"queued","payload":"{}","statusCode":null,"sentAt":null,"receivedAt":null,
			"retryReason":null,"attemptCount":0,"nextAttemptAt":"` + when + `","holding":false,"createdAt":"` + when + `",
			"updatedAt":"` + when + `"` + extra + `}`
	}
	tests := []struct {
		schema, value string
		ok            bool
	}{
		{"WebhookTestResult", testResult("null", "null"), true},
		{"WebhookTestResult", testResult(`{"statusCode":204,"headers":{},"body":"","durationMs":12}`,
			`{"sent":true,"statusCode":401,"rejected":true,"error":null}`), true},
		{"WebhookTestResult", testResult(`{"statusCode":204}`, "null"), false},
		{"WebhookTestResult", testResultPublished("null", `{"answer":"confirmed by RabbitMQ","durationMs":3}`, "null"), true},
		{"WebhookTestResult", testResultPublished("null", `{"answer":"confirmed by RabbitMQ","durationMs":-1}`, "null"), false},
		{"EventLog", eventLog(""), true},
		{"EventLog", eventLog(`,"attempts":[]`), false},
		{"EventLogWithAttempts", eventLog(`,"attempts":[]`), true},
		{"EventLogWithAttempts", eventLog(""), false},
		{"WebhookCreate", `{"name":"n","url":"https://e.com","events":["license.created"]}`, true},
		{"WebhookCreate", `{"name":"n","url":"https://e.com","events":["license.created"],"enabled":null}`, false},
	}
	for _, tt := range tests {
		err := st.check("/components/schemas/"+tt.schema, []byte(tt.value))
		if got := err == nil; got != tt.ok {
			t.Errorf("%s accepts %s = %v; want %v (%v)", tt.schema, tt.value, got, tt.ok, err)
		}
	}
}
