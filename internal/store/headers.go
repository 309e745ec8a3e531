package store

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// headersJSON is the stored form: name-value pairs in order, "o" the
// number of lines left out.
type headersJSON struct {
	Request  [][2]string `json:"q"`
	Response [][2]string `json:"s"`
	Omitted  int         `json:"o,omitempty"`
}

// EncodeHeaders bounds h and returns its stored form; nil when there is
// nothing to keep (an attempt recorded without headers).
func EncodeHeaders(h *AttemptHeaders) (*string, error) {
	if h == nil || (len(h.Request) == 0 && len(h.Response) == 0) {
		return nil, nil
	}
	out := headersJSON{Request: [][2]string{}, Response: [][2]string{}, Omitted: h.Omitted}
	lines, size := 0, 0
	keep := func(dst *[][2]string, src []Header) {
		for _, l := range src {
			name, value := cleanText(l.Name), cleanText(l.Value)
			if lines >= MaxAttemptHeaders || size+len(name)+len(value) > MaxAttemptHeaderBytes {
				out.Omitted++
				continue
			}
			lines, size = lines+1, size+len(name)+len(value)
			*dst = append(*dst, [2]string{name, value})
		}
	}
	keep(&out.Request, h.Request)
	keep(&out.Response, h.Response)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode attempt headers: %w", err)
	}
	s := string(b)
	return &s, nil
}

// decodeHeaders reads the stored form back; nil for none.
func decodeHeaders(s *string) (*AttemptHeaders, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var in headersJSON
	if err := jsonlimit.Unmarshal([]byte(*s), &in); err != nil {
		return nil, fmt.Errorf("decode attempt headers: %w", err)
	}
	h := &AttemptHeaders{Omitted: in.Omitted}
	for _, l := range in.Request {
		h.Request = append(h.Request, Header{Name: l[0], Value: l[1]})
	}
	for _, l := range in.Response {
		h.Response = append(h.Response, Header{Name: l[0], Value: l[1]})
	}
	return h, nil
}

// cleanText makes a reason storable on both engines: valid UTF-8, no NUL
// (PostgreSQL's text and jsonb hold neither).
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// CleanText is cleanText, for the statements written outside the store.
func CleanText(s string) string { return cleanText(s) }
