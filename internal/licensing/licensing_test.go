package licensing

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestNewKey(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{5}(-[0-9ABCDEFGHJKMNPQRSTVWXYZ]{5}){4}$`)
	seen := map[string]bool{}
	for range 1000 {
		k := NewKey()
		if !format.MatchString(k) || !keyPattern.MatchString(k) {
			t.Fatalf("key %q: want five groups of five in Crockford's alphabet, within the key pattern", k)
		}
		if seen[k] {
			t.Fatalf("key %q generated twice", k)
		}
		seen[k] = true
	}
}

func TestOptionalTellsAbsentNullAndValueApart(t *testing.T) {
	t.Parallel()
	var in struct {
		A Optional[string] `json:"a"`
		B Optional[string] `json:"b"`
		C Optional[int64]  `json:"c"`
	}
	if err := json.Unmarshal([]byte(`{"b":null,"c":7}`), &in); err != nil {
		t.Fatal(err)
	}
	if in.A.Set || !in.B.Set || in.B.Value != nil || !in.C.Set || in.C.Value == nil || *in.C.Value != 7 {
		t.Errorf("got %+v; want a absent, b null, c 7", in)
	}
	err := json.Unmarshal([]byte(`{"c":"seven"}`), &in)
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) || typ.Field != "c" {
		t.Errorf("wrong type: %v; want a type error naming c", err)
	}
}

func TestValidationHelpers(t *testing.T) {
	t.Parallel()
	var v InvalidError
	if got := v.id("x", "01937A4F-2B3C-7D4E-9F5A-6B7C8D9E0F1A"); got != "01937a4f-2b3c-7d4e-9f5a-6b7c8d9e0f1a" {
		t.Errorf("id %q; want it lowercased", got)
	}
	for _, bad := range []string{"", "nope", "{01937a4f-2b3c-7d4e-9f5a-6b7c8d9e0f1a}", "01937a4f2b3c7d4e9f5a6b7c8d9e0f1a"} {
		var v InvalidError
		if v.id("x", bad) != "" || len(v) != 1 {
			t.Errorf("id %q accepted", bad)
		}
	}
	if tm := v.when("t", "2030-06-01T12:00:00.123456+02:00"); tm == nil || tm.UTC().Format("2006-01-02T15:04:05.000000Z") != "2030-06-01T10:00:00.123000Z" {
		t.Errorf("when: %v; want UTC truncated to milliseconds", tm)
	}
	// An expiry is from the epoch to the end of 2199: year 0001 and year
	// 9999 are mistakes (a license that never expires has none).
	for s, ok := range map[string]bool{"0001-01-01T00:00:00Z": false, "1969-12-31T23:59:59.999Z": false, "1970-01-01T00:00:00Z": true,
		"2199-12-31T23:59:59.999Z": true, "2200-01-01T00:00:00Z": false, "9999-12-31T23:59:59.999Z": false} {
		var w InvalidError
		if got := w.when("expiresAt", s); (got != nil) != ok || (len(w) == 1 && w[0].Field != "expiresAt") {
			t.Errorf("when(%q) = %v, %v; want accepted %v (naming expiresAt otherwise)", s, got, w, ok)
		}
	}
	raw := json.RawMessage(" {\"b\": 12345678901234567890 ,\n \"a\" : \"Zoë\"} ")
	if got := v.metadata(Optional[json.RawMessage]{Set: true, Value: &raw}); string(got) != `{"b":12345678901234567890,"a":"Zoë"}` {
		t.Errorf("metadata %s; want it compacted, order and digits kept", got)
	}
	if len(v) != 0 {
		t.Errorf("unexpected errors %v", v)
	}
	huge := json.RawMessage(`{"n":"` + strings.Repeat("x", MaxMetadata) + `"}`)
	if v.metadata(Optional[json.RawMessage]{Set: true, Value: &huge}) != nil || len(v) != 1 || v[0].Field != "metadata" {
		t.Errorf("metadata over %d bytes accepted: %v", MaxMetadata, v)
	}
	v = nil
	for _, s := range []string{"a@b.c", "Zoë <z@example.com>", "nope", " a@example.com"} {
		var v InvalidError
		if ok := v.email("email", s); ok != (s == "a@b.c") {
			t.Errorf("email(%q) = %v", s, ok)
		}
	}
}
