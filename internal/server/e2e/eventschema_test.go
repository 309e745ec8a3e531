package e2e_test

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestEveryDeliveryMatchesItsSchema: a real delivery of every kind (fired
// through the API, or by a webhook's change of health, and received on
// loopback) is valid under the JSON Schema a running herald serves for its
// kind, checked by a JSON Schema validator that shares no code with
// herald, formats asserted; so the published schemas and the payloads
// cannot drift apart. And the schemas are not so loose that anything
// passes: a payload of another kind, or with a field its data does not
// have, is refused.
func TestEveryDeliveryMatchesItsSchema(t *testing.T) {
	t.Parallel()
	real := fireEveryKind(t)
	maps.Copy(real, fireOperationalKinds(t))
	h := heraldtest.Start(t, heraldtest.Options{})

	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schemas := map[event.Kind]*jsonschema.Schema{}
	for _, k := range event.Kinds {
		// No token: receivers' build tools fetch schemas as they are.
		resp, err := http.Get(h.URL + "/v3/event-types/" + string(k) + "/schema")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/schema+json" {
			t.Fatalf("%s: schema answered %d %s: %s", k, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: schema: %v", k, err)
		}
		url := "urn:herald:event-type:" + string(k)
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if schemas[k], err = c.Compile(url); err != nil {
			t.Fatalf("%s: the served schema does not compile: %v", k, err)
		}
	}

	valid := func(k event.Kind, body []byte) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v in %s", k, err, body)
		}
		return schemas[k].Validate(v)
	}
	for _, k := range event.Kinds {
		d, ok := real[string(k)]
		if !ok {
			t.Errorf("%s: no real delivery of it was fired", k)
			continue
		}
		if err := valid(k, d.Body); err != nil {
			t.Errorf("%s: a real delivery breaks its schema: %v\n%s", k, err, d.Body)
		}
	}

	created := real[string(event.LicenseCreated)].Body
	if valid(event.LicenseDeleted, created) == nil {
		t.Error("license.deleted's schema accepts a license.created delivery")
	}
	extra := bytes.Replace(created, []byte(`"data":{`), []byte(`"data":{"colour":"red",`), 1)
	if valid(event.LicenseCreated, extra) == nil {
		t.Errorf("license.created's schema accepts data with a field a license has not: %s", extra)
	}
	badTime := bytes.Replace(created, []byte(`"triggeredAt":"`), []byte(`"triggeredAt":"yesterday`), 1)
	if valid(event.LicenseCreated, badTime) == nil {
		t.Errorf("license.created's schema accepts a triggeredAt that is not a time: %s", badTime)
	}
}
