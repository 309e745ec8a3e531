package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/heraldhq/herald/webhook"
)

// body is a delivery as herald sends it: raw UTF-8, no \u escapes.
var body = []byte(`{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","event":"license.created","data":{"key":"HRLD-7Q4M-2KX9","name":"Zoë – 日本語 – 🚀"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)

const token = "whsec_example"

func ExampleSign() {
	fmt.Println(webhook.Sign(token, body))
	// Output: QerX8+QjhXF/DwRGQlzweve5Q/eXHgma+fx9W5j9FqU=
}

func ExampleVerify() {
	signature := webhook.Sign(token, body)

	fmt.Println(webhook.Verify(token, body, signature))

	// The same document with "ë" escaped as \u00eb is different bytes, so
	// the signature no longer matches: verify the body exactly as received.
	escaped := bytes.Replace(body, []byte("ë"), []byte(`\u00eb`), 1)
	fmt.Println(webhook.Verify(token, escaped, signature))

	fmt.Println(webhook.Verify(token, body, ""))
	// Output:
	// <nil>
	// webhook: signature does not match the body
	// webhook: missing webhook-signature header
}

func ExampleMiddleware() {
	receiver := webhook.Middleware(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := webhook.Parse(webhook.RawBody(r))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Println("received", p.Event, p.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	send := func(body []byte, signature string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set(webhook.SignatureHeader, signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, answer)))
	}

	signature := webhook.Sign(token, body)
	send(body, signature)

	tampered := bytes.Replace(body, []byte("HRLD-7Q4M"), []byte("HRLD-7Q4N"), 1)
	send(tampered, signature)
	// Output:
	// received license.created 0f8fad5b-d9cb-469f-a165-70867728950e
	// 204
	// 401 webhook: signature does not match the body
}

func ExampleParse() {
	// Verify first; Parse trusts the bytes it is given.
	if err := webhook.Verify(token, body, webhook.Sign(token, body)); err != nil {
		fmt.Println(err)
		return
	}
	p, err := webhook.Parse(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.ID)
	fmt.Println(p.Event)
	fmt.Println(p.TriggeredAt.Format("2006-01-02 15:04:05.000 MST"))
	fmt.Println(string(p.Data))
	// Output:
	// 0f8fad5b-d9cb-469f-a165-70867728950e
	// license.created
	// 2026-11-21 08:07:13.120 UTC
	// {"key":"HRLD-7Q4M-2KX9","name":"Zoë – 日本語 – 🚀"}
}

func ExampleVerifyAny() {
	// During a token rotation, hold the old token and the next one: herald
	// signs webhook-signature with the old token until the rotation ends and
	// with the next one from then on.
	tokens := []string{"whsec_old", "whsec_next"}
	fmt.Println(webhook.VerifyAny(tokens, body, webhook.Sign("whsec_old", body)))
	fmt.Println(webhook.VerifyAny(tokens, body, webhook.Sign("whsec_next", body)))
	fmt.Println(webhook.VerifyAny(tokens, body, webhook.Sign("whsec_other", body)))
	// Output:
	// <nil>
	// <nil>
	// webhook: signature does not match the body
}

// Deliveries of one license's events can arrive out of order: here its
// license.created is retried and arrives after license.updated. Keeping the
// sequence of the last event applied to each resource (in a real receiver,
// a column beside the row it mirrors, written in the same transaction)
// makes applying idempotent and order-proof: the stale license.created, and
// any repeat, change nothing.
func ExamplePayload_Newer() {
	applied := map[string]int64{} // resource id -> sequence of its last applied event
	for _, b := range []string{
		`{"id":"e2","event":"license.updated","data":{"id":"L1","allowedActivations":5},"triggeredAt":"2026-11-21T09:00:00.000Z","sequence":2}`,
		`{"id":"e1","event":"license.created","data":{"id":"L1","allowedActivations":3},"triggeredAt":"2026-11-21T08:07:13.120Z","sequence":1}`,
		`{"id":"e2","event":"license.updated","data":{"id":"L1","allowedActivations":5},"triggeredAt":"2026-11-21T09:00:00.000Z","sequence":2}`,
	} {
		p, err := webhook.Parse([]byte(b))
		if err != nil {
			panic(err)
		}
		var resource struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(p.Data, &resource); err != nil {
			panic(err)
		}
		if !p.Newer(applied[resource.ID]) {
			fmt.Println("skip", p.Event, p.Sequence)
			continue
		}
		applied[resource.ID] = p.Sequence
		fmt.Println("apply", p.Event, p.Sequence)
	}
	// Output:
	// apply license.updated 2
	// skip license.created 1
	// skip license.updated 2
}
