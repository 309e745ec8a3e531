package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/openapitest"
)

// eventsDoc is the page that lists every event kind with an example.
const eventsDoc = "../../../docs/events.md"

// docExamples reads the example payload of each kind from the page: the
// first ```json block after a "### `kind`" heading.
func docExamples(t *testing.T) map[string][]byte {
	t.Helper()
	page, err := os.ReadFile(eventsDoc)
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("(?m)^### `([^`]+)`")
	block := regexp.MustCompile("(?s)```json\n(.*?)```")
	out := map[string][]byte{}
	locs := heading.FindAllSubmatchIndex(page, -1)
	for i, loc := range locs {
		end := len(page)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		kind := string(page[loc[2]:loc[3]])
		if _, dup := out[kind]; dup {
			t.Errorf("%s: %s has two sections", eventsDoc, kind)
		}
		m := block.FindSubmatch(page[loc[1]:end])
		if m == nil {
			t.Errorf("%s: %s has no json example", eventsDoc, kind)
			continue
		}
		out[kind] = m[1]
	}
	return out
}

// schemaOf names the API reference schema of each kind's data, as the
// kind's declaration gives it.
func schemaOf(kind string) string {
	d, _ := event.Declared(event.Kind(kind))
	return d.Resource
}

// payloadSchemaOf names the API reference schema of each kind's whole
// payload.
func payloadSchemaOf(kind string) string {
	d, _ := event.Declared(event.Kind(kind))
	return d.SchemaName()
}

// keys lists an object's keys in order, and those of the first object of
// each array inside it, as "files[].id".
func keys(t *testing.T, raw []byte) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && dec.More() {
				out = append(out, v)
				var items []json.RawMessage
				if json.Unmarshal(obj[v], &items) == nil && len(items) > 0 {
					for _, k := range keys(t, items[0]) {
						out = append(out, v+"[]."+k)
					}
				}
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return out
}

// TestEventsDocMatchesTheCode holds docs/events.md to the code: a section
// for every kind a webhook may subscribe to and no other, and each
// example a valid payload whose data matches the API reference's schema
// and has the fields, in the order, of a payload that the kind really
// sends (fired here through the API).
func TestEventsDocMatchesTheCode(t *testing.T) {
	t.Parallel()
	examples := docExamples(t)
	var documented []string
	for k := range examples {
		documented = append(documented, k)
	}
	slices.Sort(documented)
	want := allKinds()
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Errorf("%s documents %v; want every kind: %v", eventsDoc, documented, want)
	}

	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	real := fireEveryKind(t)
	for k, d := range fireOperationalKinds(t) {
		real[k] = d
	}
	for _, kind := range want {
		ex, ok := examples[kind]
		if !ok {
			continue
		}
		var p delivered
		if err := json.Unmarshal(ex, &p); err != nil {
			t.Errorf("%s example: %v", kind, err)
			continue
		}
		var v any
		json.Unmarshal(ex, &v)
		if err := doc.Components.Schemas[payloadSchemaOf(kind)].Value.VisitJSON(v); err != nil {
			t.Errorf("%s example is not a %s: %v", kind, payloadSchemaOf(kind), err)
		}
		if p.Event != kind {
			t.Errorf("%s example has event %q", kind, p.Event)
		}
		var data any
		json.Unmarshal(p.Data, &data)
		if err := doc.Components.Schemas[schemaOf(kind)].Value.VisitJSON(data); err != nil {
			t.Errorf("%s example data is not a %s: %v", kind, schemaOf(kind), err)
		}
		r, ok := real[kind]
		if !ok {
			t.Errorf("%s: not fired by fireEveryKind", kind)
			continue
		}
		if got, want := keys(t, p.Data), keys(t, r.Data); !slices.Equal(got, want) {
			t.Errorf("%s example data has fields %v; a real payload has %v:\n%s", kind, got, want, r.Data)
		}
	}
}

// fireEveryKind fires every licensing event kind through the API and
// returns one real payload of each (fireOperationalKinds gives the others).
func fireEveryKind(t *testing.T) map[string]delivered {
	t.Helper()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv, _ := watch(t, h, allKinds()...)
	var product, user, license, activation, release, trial resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "Zoë's App", "metadata": map[string]any{"plan": "pro"}}, &product)
	h.Must(200, "PATCH", "/v3/products/"+idOf(product), map[string]any{"name": "Zoë's App 2"}, nil)
	h.Must(201, "POST", "/v3/users", map[string]any{"email": "zoe@example.com", "name": "Zoë Müller"}, &user)
	h.Must(200, "PATCH", "/v3/users/"+idOf(user), map[string]any{"name": "Zoë Ångström"}, nil)
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "userId": idOf(user), "validity": 31536000,
		"allowedActivations": 3, "metadata": map[string]any{"customer": "Zoë Müller 🚀"}}, &license)
	lid := idOf(license)
	h.Must(200, "PATCH", "/v3/licenses/"+lid, map[string]any{"allowedActivations": 5}, nil)
	h.Must(200, "POST", "/v3/licenses/"+lid+"/renew", nil, nil)
	h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "4c:32:75:9a:1e:0f",
		"hostname": "poste-de-zoë", "os": "linux"}, &activation)
	h.Must(204, "DELETE", "/v3/activations/"+idOf(activation), nil, nil)
	// Moved to an instant past: license.expiresAt.updated, then by herald's
	// clock license.expiring-soon and license.expired, before the license goes.
	h.Must(200, "PATCH", "/v3/licenses/"+lid+"/expires-at", map[string]any{"expiresAt": time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)}, nil)
	heraldtest.Eventually(t, 10*time.Second, "license.expired", func() bool {
		for _, r := range rcv.Requests() {
			if strings.Contains(string(r.Body), `"event":"license.expired"`) {
				return true
			}
		}
		return false
	})
	h.Must(201, "POST", "/v3/releases", map[string]any{"productId": idOf(product), "version": "2.1.0"}, &release)
	h.Must(201, "POST", "/v3/releases/"+idOf(release)+"/files", map[string]any{"filename": "app.tar.gz", "size": 1024}, nil)
	h.Must(204, "DELETE", "/v3/releases/"+idOf(release), nil, nil)
	h.Must(201, "POST", "/v3/trial-activations", map[string]any{"productId": idOf(product), "fingerprint": "4c:32:75:9a:1e:0f",
		"expiresAt": "2026-12-05T08:07:13.120Z"}, &trial)
	h.Must(204, "DELETE", "/v3/trial-activations/"+idOf(trial), nil, nil)
	h.Must(204, "DELETE", "/v3/licenses/"+lid, nil, nil)
	h.Must(204, "DELETE", "/v3/users/"+idOf(user), nil, nil)
	h.Must(204, "DELETE", "/v3/products/"+idOf(product), nil, nil)

	out := map[string]delivered{}
	for _, d := range receive(t, rcv, len(event.Kinds)-len(operationalKinds)) {
		out[d.Event] = d
	}
	return out
}

// TestTestSamplesMatchTheReference: the synthetic data the Test action
// sends for each kind has the shape of the kind's resource in the API
// reference, so a receiver built against the reference accepts it.
func TestTestSamplesMatchTheReference(t *testing.T) {
	t.Parallel()
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range event.Kinds {
		b, err := json.Marshal(event.Sample(k, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal(b, &v)
		if err := doc.Components.Schemas[schemaOf(string(k))].Value.VisitJSON(v); err != nil {
			t.Errorf("sample of %s is not a %s: %v", k, schemaOf(string(k)), err)
		}
	}
}
