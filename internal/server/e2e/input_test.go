package e2e_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// send makes an API call with the given raw body and headers and returns the
// status and the decoded problem (or answer).
func send(t *testing.T, h *heraldtest.Herald, method, path, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// fieldOf returns the field the problem's first error names.
func fieldOf(p map[string]any) string {
	errs, _ := p["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	f, _ := errs[0].(map[string]any)["field"].(string)
	return f
}

// The Authorization scheme is case-insensitive (RFC 9110).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	for _, c := range []struct {
		header string
		want   int
	}{
		{"Bearer " + h.Token, 200}, {"bearer " + h.Token, 200}, {"BEARER " + h.Token, 200}, {"bEaReR " + h.Token, 200},
		{"Basic " + h.Token, 401}, {"Bearer", 401}, {"Bearer ", 401}, {"Bearerx " + h.Token, 401},
	} {
		req, _ := http.NewRequest("GET", h.URL+"/v3/account", nil)
		req.Header.Set("Authorization", c.header)
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization: %q: %d; want %d", strings.Replace(c.header, h.Token, "<token>", 1), resp.StatusCode, c.want)
		}
	}
}

// Bodies that are not what the reference says are refused: not UTF-8 or
// sent without a Content-Type (415), a key twice in one object at any depth
// (400 naming the key). A call whose body is optional still takes no body
// and no Content-Type.
func TestBodiesThatAreNotTheReferenceAreRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("w", rcv.URL, "license.created")
	var p struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &p)
	var l struct{ ID string }
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": p.ID, "validity": 86400}, &l)
	json := []string{"Content-Type", "application/json"}
	for _, c := range []struct {
		name, method, path, body string
		header                   []string
		want                     int
		field                    string
	}{
		{"invalid UTF-8", "POST", "/v3/products", "{\"name\":\"a\xff\xfeb\"}", json, 415, ""},
		{"invalid UTF-8 in metadata", "POST", "/v3/products", "{\"name\":\"a\",\"metadata\":{\"k\":\"\xc3\"}}", json, 415, ""},
		{"no content type", "POST", "/v3/products", `{"name":"x"}`, nil, 415, ""},
		{"no content type on an optional body", "POST", "/v3/webhooks/" + hook.ID + "/test", `{}`, nil, 415, ""},
		{"duplicate key", "POST", "/v3/products", `{"name":"a","name":"b"}`, json, 400, "name"},
		{"duplicate key in metadata", "POST", "/v3/products", `{"name":"a","metadata":{"plan":"x","n":{"a":1},"plan":"y"}}`, json, 400, "metadata.plan"},
		{"duplicate key deep in metadata", "POST", "/v3/products", `{"name":"a","metadata":{"list":[{"a":1},{"a":1,"a":2}]}}`, json, 400, "metadata.list[1].a"},
		{"duplicate key in a patch", "PATCH", "/v3/account", `{"name":"a","name":"b"}`, json, 400, "name"},
		{"no body, no content type, optional body", "POST", "/v3/webhooks/" + hook.ID + "/test", "", nil, 200, ""},
		{"no body, no content type, renew", "POST", "/v3/licenses/" + l.ID + "/renew", "", nil, 200, ""},
		{"same key in sibling objects", "POST", "/v3/products", `{"name":"ok","metadata":{"a":{"k":1},"b":{"k":1}}}`, json, 201, ""},
		// Metadata nests at most 62 levels, so that the event's body, which
		// holds it two levels in, nests at most 64; a body past 64 is
		// refused before it is decoded.
		{"metadata 62 levels deep", "POST", "/v3/products", `{"name":"deep","metadata":` + nested(62) + `}`, json, 201, ""},
		{"metadata 63 levels deep", "POST", "/v3/products", `{"name":"x","metadata":` + nested(63) + `}`, json, 422, "metadata"},
		{"a body 65 levels deep", "POST", "/v3/products", `{"name":"x","metadata":` + nested(64) + `}`, json, 400, ""},
		{"a patch 65 levels deep", "PATCH", "/v3/licenses/" + l.ID, `{"metadata":` + nested(64) + `}`, json, 400, ""},
	} {
		got, prob := send(t, h, c.method, c.path, c.body, c.header...)
		if got != c.want || fieldOf(prob) != c.field {
			t.Errorf("%s: %d naming %q; want %d naming %q (%v)", c.name, got, fieldOf(prob), c.want, c.field, prob)
		}
	}
	var list struct{ Data []map[string]any }
	h.Must(200, "GET", "/v3/products", nil, &list)
	if len(list.Data) != 3 {
		t.Errorf("%d products; want the first and the two valid ones: %v", len(list.Data), list.Data)
	}
}

// nested is a JSON object nested depth levels.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// A control character in any single-line text field of the API is refused
// with 422 naming the field, alike on both engines (PostgreSQL cannot store
// a NUL), and changes nothing. Metadata is the client's own JSON and may
// hold any JSON string.
func TestControlCharactersInTextAreRefusedOnBothEngines(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		rcv := heraldtest.NewReceiver(t)
		hook := h.CreateWebhook("w", rcv.URL, "license.deleted") // nothing below fires it, so the logs stay still
		var p, u, l, r struct{ ID, Key string }
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &p)
		h.Must(201, "POST", "/v3/users", map[string]any{"email": "u@example.com", "name": "U"}, &u)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": p.ID}, &l)
		h.Must(201, "POST", "/v3/releases", map[string]any{"productId": p.ID, "version": "1.0.0"}, &r)
		snapshot := func() map[string]any {
			out := map[string]any{}
			for _, path := range []string{"/v3/account", "/v3/products", "/v3/users", "/v3/licenses", "/v3/activations",
				"/v3/releases", "/v3/trial-activations", "/v3/webhooks", "/v3/webhook-event-logs"} {
				var v any
				h.Must(200, "GET", path, nil, &v)
				out[path] = v
			}
			return out
		}
		before := snapshot()
		const sha = "0000000000000000000000000000000000000000000000000000000000000000"
		for _, c := range []struct{ method, path, body, field string }{
			{"PATCH", "/v3/account", `{"name":"a\u0000b"}`, "name"},
			{"PATCH", "/v3/account", `{"notificationEmail":"a\u0000b@example.com"}`, "notificationEmail"},
			{"POST", "/v3/products", `{"name":"a\u0000b"}`, "name"},
			{"PATCH", "/v3/products/" + p.ID, `{"name":"a\u0000b"}`, "name"},
			{"POST", "/v3/users", `{"email":"a\u0000b@example.com"}`, "email"},
			{"POST", "/v3/users", `{"email":"n@example.com","name":"a\u0000b"}`, "name"},
			{"PATCH", "/v3/users/" + u.ID, `{"name":"a\u0000b"}`, "name"},
			{"POST", "/v3/webhooks", `{"name":"a\u0000b","url":"` + rcv.URL + `","events":["license.created"]}`, "name"},
			{"POST", "/v3/webhooks", `{"name":"n","url":"` + rcv.URL + `/a\u0000b","events":["license.created"]}`, "url"},
			{"POST", "/v3/webhooks", `{"name":"n","url":"` + rcv.URL + `","events":["license.created\u0000"]}`, "events[0]"},
			{"PATCH", "/v3/webhooks/" + hook.ID, `{"token":"abcdefghijklmnopq\u0000rstuvwxyz"}`, "token"},
			{"POST", "/v3/licenses", `{"productId":"` + p.ID + `","key":"ABCD\u0000EFGH"}`, "key"},
			{"POST", "/v3/activations", `{"licenseKey":"` + l.Key + `\u0000","fingerprint":"fp"}`, "licenseKey"},
			{"POST", "/v3/activations", `{"licenseKey":"` + l.Key + `","fingerprint":"f\u0000p"}`, "fingerprint"},
			{"POST", "/v3/activations", `{"licenseKey":"` + l.Key + `","fingerprint":"fp","hostname":"h\u0000"}`, "hostname"},
			{"POST", "/v3/activations", `{"licenseKey":"` + l.Key + `","fingerprint":"fp","os":"o\u0000"}`, "os"},
			{"POST", "/v3/releases", `{"productId":"` + p.ID + `","version":"2.0\u0000"}`, "version"},
			{"POST", "/v3/releases/" + r.ID + "/files", `{"filename":"a\u0000.zip","size":1,"sha256":"` + sha + `"}`, "filename"},
			{"POST", "/v3/trial-activations", `{"productId":"` + p.ID + `","fingerprint":"f\u0000p"}`, "fingerprint"},
			{"POST", "/v3/products", `{"name":"a\nb"}`, "name"},
			{"POST", "/v3/products", `{"name":"a\u007fb"}`, "name"},
			{"POST", "/v3/products", `{"name":"a\u0085b"}`, "name"},
		} {
			got, prob := send(t, h, c.method, c.path, c.body, "Content-Type", "application/json")
			if got != 422 || fieldOf(prob) != c.field {
				t.Errorf("%s %s %s: %d naming %q; want 422 naming %q (%v)", c.method, c.path, c.body, got, fieldOf(prob), c.field, prob)
			}
		}
		if after := snapshot(); !reflect.DeepEqual(before, after) {
			t.Errorf("refused input changed something:\nbefore %v\nafter  %v", before, after)
		}
		var m struct{ Metadata map[string]string }
		h.Must(201, "POST", "/v3/products", `{"name":"M","metadata":{"note":"line one\nline two \u0000 end"}}`, &m)
		if m.Metadata["note"] != "line one\nline two \x00 end" {
			t.Errorf("metadata came back as %q", m.Metadata["note"])
		}
	})
}

// A control character in the path or the query never reaches the store
// (PostgreSQL fails on a NUL): an id with one names nothing (404), and a query
// parameter with one is invalid (422 naming it), alike on both engines.
func TestControlCharactersInTheURLAreRefusedOnBothEngines(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		for _, c := range []struct {
			method, path string
			want         int
			field        string
		}{
			{"GET", "/v3/products/a%00b", 404, ""},
			{"GET", "/v3/webhooks/a%00b", 404, ""},
			{"GET", "/v3/webhook-event-logs/a%00b", 404, ""},
			{"DELETE", "/v3/webhooks/a%00b", 404, ""},
			{"POST", "/v3/webhook-event-logs/a%01b/resend", 404, ""},
			{"GET", "/v3/licenses?productId=a%00b", 422, "productId"},
			{"GET", "/v3/products?cursor=a%00b", 422, "cursor"},
			{"GET", "/v3/webhook-event-logs?webhookId=a%00b", 422, "webhookId"},
			{"GET", "/v3/webhooks?status=%7F", 422, "status"},
		} {
			got, prob := send(t, h, c.method, c.path, "")
			if got != c.want || fieldOf(prob) != c.field {
				t.Errorf("%s %s: %d naming %q; want %d naming %q (%v)", c.method, c.path, got, fieldOf(prob), c.want, c.field, prob)
			}
		}
	})
}
