package validator_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/validator"
)

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	old := map[string]string{"X-Api-Key": "secret-1"}
	many := map[string]string{}
	for i := range validator.MaxHeaders + 1 {
		many["X-"+strings.Repeat("a", i+1)] = "v"
	}
	tests := []struct {
		name    string
		headers map[string]string
		field   string // "" for valid
		detail  string
	}{
		{"valid", map[string]string{"X-Api-Key": "k", "Authorization": "Bearer t", "x-tenant": "42"}, "", ""},
		{"masked keeps the stored value", map[string]string{"X-Api-Key": validator.MaskedHeaderValue}, "", ""},
		{"masked without a stored value", map[string]string{"X-Other": validator.MaskedHeaderValue}, `headers["X-Other"]`, "masked"},
		{"too many", many, "headers", "at most 20"},
		{"not a token", map[string]string{"X Api": "v"}, `headers["X Api"]`, "header name"},
		{"empty name", map[string]string{"": "v"}, `headers[""]`, "header name"},
		{"content-type", map[string]string{"content-type": "text/plain"}, `headers["content-type"]`, "herald's own"},
		{"Content-Length", map[string]string{"Content-Length": "1"}, `headers["Content-Length"]`, "herald's own"},
		{"Host", map[string]string{"HOST": "evil"}, `headers["HOST"]`, "herald's own"},
		{"User-Agent", map[string]string{"User-Agent": "x"}, `headers["User-Agent"]`, "herald's own"},
		{"webhook-signature", map[string]string{"Webhook-Signature": "x"}, `headers["Webhook-Signature"]`, "herald's own"},
		{"webhook-anything", map[string]string{"webhook-foo": "x"}, `headers["webhook-foo"]`, "herald's own"},
		{"transfer-encoding", map[string]string{"Transfer-Encoding": "chunked"}, `headers["Transfer-Encoding"]`, "frames"},
		{"twice", map[string]string{"X-A": "1", "x-a": "2"}, `headers["x-a"]`, "same header"},
		{"newline", map[string]string{"X-A": "1\r\nX-B: 2"}, `headers["X-A"]`, "control"},
		{"NUL", map[string]string{"X-A": "a\x00"}, `headers["X-A"]`, "control"},
		{"too long", map[string]string{"X-A": strings.Repeat("v", validator.MaxHeaderBytes)}, "headers", "bytes"},
	}
	for _, tt := range tests {
		var v validator.Errors
		validator.CheckHeaders(&v, "headers", tt.headers, old)
		if tt.field == "" {
			if len(v) != 0 {
				t.Errorf("%s: refused %v", tt.name, v)
			}
			continue
		}
		if len(v) != 1 || v[0].Field != tt.field || !strings.Contains(v[0].Detail, tt.detail) {
			t.Errorf("%s: %v; want one error on %s saying %q", tt.name, v, tt.field, tt.detail)
		}
	}
	h := map[string]string{"X-Api-Key": validator.MaskedHeaderValue}
	validator.CheckHeaders(new(validator.Errors), "headers", h, old)
	if h["X-Api-Key"] != "secret-1" {
		t.Errorf("masked value became %q; want the stored one", h["X-Api-Key"])
	}
}
