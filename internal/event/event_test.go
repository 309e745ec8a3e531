package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestBuildKeepsRawUTF8AndFieldOrder(t *testing.T) {
	at := time.Date(2026, 11, 21, 8, 7, 13, 120_000_000, time.FixedZone("CET", 3600))
	body, err := Build("0193a1b2-0000-7000-8000-000000000000", LicenseCreated,
		map[string]any{"key": "Zoë – 日本語 – 🚀 <&>"}, at)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"0193a1b2-0000-7000-8000-000000000000","event":"license.created","data":{"key":"Zoë – 日本語 – 🚀 <&>"},"triggeredAt":"2026-11-21T07:07:13.120Z"}`
	if string(body) != want {
		t.Errorf("got %s; want %s", body, want)
	}
	if bytes.Contains(body, []byte(`\u`)) {
		t.Errorf("body has \\u escapes: %s", body)
	}
}

func TestTriggeredAtKeepsTrailingZeros(t *testing.T) {
	body, err := Build("x", LicenseDeleted, map[string]any{}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ TriggeredAt string }
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.TriggeredAt != "2026-01-02T03:04:05.000Z" {
		t.Errorf("got %q; want 2026-01-02T03:04:05.000Z", p.TriggeredAt)
	}
}

func TestSampleHasNonASCIIForEveryKind(t *testing.T) {
	for _, k := range Kinds {
		body, err := Build("id", k, Sample(k, time.Now()), time.Now())
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		ascii := true
		for _, b := range body {
			if b >= 0x80 {
				ascii = false
				break
			}
		}
		if ascii {
			t.Errorf("%s: sample payload is pure ASCII: %s", k, body)
		}
	}
}

func TestLineSeparatorsAreRawButEscapedBackslashesStay(t *testing.T) {
	in := map[string]string{"a": "x\u2028y\u2029z", "b": `\u2028`}
	body, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"a\":\"x\u2028y\u2029z\",\"b\":\"\\\\u2028\"}"
	if string(body) != want {
		t.Errorf("got %q; want %q", body, want)
	}
	var back map[string]string
	if err := json.Unmarshal(body, &back); err != nil || back["a"] != in["a"] || back["b"] != in["b"] {
		t.Errorf("round trip: %q, %v", back, err)
	}
}

func TestRawUTF8(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"accent", `{"a":"Zo\u00eb"}`, `{"a":"Zoë"}`},
		{"upper hex", `{"a":"Zo\u00EB"}`, `{"a":"Zoë"}`},
		{"emoji pair", `{"a":"\ud83d\ude80"}`, `{"a":"🚀"}`},
		{"cjk", `{"a":"\u65e5\u672c"}`, `{"a":"日本"}`},
		{"ascii escapes stay", `{"a":"\u0022\u005c\u0001\n"}`, `{"a":"\u0022\u005c\u0001\n"}`},
		{"escaped backslash", `{"a":"\\u00eb"}`, `{"a":"\\u00eb"}`},
		{"lone high surrogate", `{"a":"\ud83d!"}`, `{"a":"\ud83d!"}`},
		{"lone low surrogate", `{"a":"\ude80"}`, `{"a":"\ude80"}`},
		{"in a key", `{"caf\u00e9":1}`, `{"café":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(rawUTF8([]byte(tt.in)))
			if got != tt.want {
				t.Errorf("got %s; want %s", got, tt.want)
			}
			var a, b any
			if json.Unmarshal([]byte(tt.in), &a) != nil || json.Unmarshal([]byte(got), &b) != nil {
				t.Fatal("not JSON")
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("meaning changed: %v → %v", a, b)
			}
		})
	}
}

func TestBuildUnescapesRawMessageData(t *testing.T) {
	body, err := Build("id", LicenseCreated, map[string]any{"metadata": json.RawMessage(`{"customer":"Zo\u00eb \ud83d\ude80"}`)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("Zoë 🚀")) || bytes.Contains(body, []byte(`\u`)) {
		t.Errorf("body %s", body)
	}
}

// Metadata is copied into a body as a json.RawMessage, which encoding/json
// does not check for UTF-8; the body still is UTF-8, each bad byte U+FFFD.
func TestBuildWritesInvalidUTF8AsReplacementCharacters(t *testing.T) {
	body, err := Build("id", LicenseCreated, struct {
		Metadata json.RawMessage `json:"metadata"`
	}{json.RawMessage("{\"k\":\"a\xff\xc3b\"}")}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"data":{"metadata":{"k":"a��b"}}`; !bytes.Contains(body, []byte(want)) {
		t.Errorf("got %s; want it to hold %s", body, want)
	}
}
