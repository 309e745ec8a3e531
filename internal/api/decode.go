package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/admission"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/openapi"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// MaxBody is the largest request body the API reads.
const MaxBody = 1 << 20

// decode reads a JSON object into v, refusing unknown fields, trailing data,
// duplicate keys, control characters in text, nesting past
// jsonlimit.MaxDepth, bodies that are not UTF-8 or not sent as JSON, and
// bodies over MaxBody, with a problem that names the field where one is at
// fault. An empty body decodes as {} when optional, and needs no
// Content-Type. The decoder only ever reads a body checkTokens passed, so
// never one nested deeper than the limit: checkTokens refuses the 65th
// level of any body whose syntax holds that far, and the decoder stops at
// the first syntax error of the others.
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return unsupported("send the body as JSON, with Content-Type: application/json")
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return unsupported("send the body as UTF-8 (charset=" + cs + " is not accepted)")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return readProblem(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body must be a JSON object")
	}
	if ct == "" {
		return unsupported("send the body with Content-Type: application/json")
	}
	if !utf8.Valid(body) {
		return unsupported("the body is not valid UTF-8; send it as UTF-8 JSON")
	}
	if err := checkBody(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			if path := unknownFieldPath(body, v); path != "" {
				return Invalid{{path, "is not a known field"}}.Err()
			}
		}
		return jsonProblem(err)
	}
	// More() is false before a stray } or ], so ask for one more value.
	if _, err := dec.Token(); err != io.EOF {
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body must hold one JSON object and nothing after it")
	}
	return nil
}

func unsupported(detail string) error {
	return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type", detail)
}

// readProblem answers a body that could not be read: too large (413), too
// slow, cut by the server's read deadline (408), or refused because the
// bodies in flight are at their bound (503, with the Retry-After the bound
// set).
func readProblem(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case admission.IsBusy(err):
		return problem(http.StatusServiceUnavailable, "busy", "Busy",
			"herald is reading as many request bodies as it may hold at once; nothing was changed, retry after the Retry-After seconds")
	case errors.As(err, &tooLarge):
		return problem(http.StatusRequestEntityTooLarge, "body-too-large", "Body too large",
			fmt.Sprintf("the body must be at most %d bytes", MaxBody))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return problem(http.StatusRequestTimeout, "request-timeout", "Request timeout", "the body did not arrive in time")
	}
	return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body could not be read")
}

func jsonProblem(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", fmt.Sprintf("invalid JSON at byte %d: %v", syntax.Offset, syntax))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body must be a JSON object")
		}
		return Invalid{{field, "must be " + jsonType(typ.Type.String())}}.Err()
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Invalid{{field, "is not a known field"}}.Err()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the JSON ends too early")
	}
	return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", err.Error())
}

func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map"), strings.Contains(goType, "struct"):
		return "an object"
	}
	return "a string"
}

// checkURL refuses control characters in the path (no id holds one: 404)
// and in query parameters (422 naming the parameter) before any handler
// passes them to the store, where PostgreSQL would fail on a NUL.
func checkURL(r *http.Request) error {
	if validator.SingleLine(r.URL.Path) != "" {
		return problem(http.StatusNotFound, "not-found", "Not found", "no resource at this path")
	}
	var v Invalid
	for name, values := range r.URL.Query() {
		for _, s := range values {
			if d := validator.SingleLine(s); d != "" {
				v.Add(name, d)
				break
			}
		}
	}
	return v.Err()
}

// checkQuery refuses, 422 naming each, the query parameters that the call
// does not take, as the API reference lists them (openapi.UnknownQuery): a
// typo (?webhook= for ?webhookId=) would otherwise be ignored, and a list
// answer everything, unfiltered.
func checkQuery(r *http.Request) error {
	unknown, call, takes := openapi.UnknownQuery(r.Method, r.URL.Path, r.URL.RawQuery)
	if len(unknown) == 0 {
		return nil
	}
	what := "takes no query parameters"
	if len(takes) > 0 {
		what = "takes only " + strings.Join(takes, ", ")
	}
	var v Invalid
	for _, name := range unknown {
		v.Add(name, "is not a query parameter of "+call+", which "+what)
	}
	return v.Err()
}

// KnownQuery serves next, but answers 422 (a problem naming each) to a
// request with query parameters the reference's call does not take: for
// the operational calls outside /v3 (/healthz, /readyz, /metrics), which
// the API's own handlers check for themselves.
func KnownQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r); err != nil {
			var p *Problem
			errors.As(err, &p)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(p.Status)
			json.NewEncoder(w).Encode(p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// page reads ?limit= and ?cursor=.
func page(r *http.Request) (store.Page, error) {
	p := store.Page{Limit: 50, Cursor: r.URL.Query().Get("cursor")}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return p, Invalid{{"limit", "must be a whole number from 1 to 500"}}.Err()
		}
		p.Limit = n
	}
	// Cursors are ids herald issued (lowercase UUIDs); anything else is
	// refused rather than quietly read as the first page.
	if c := p.Cursor; c != "" {
		if u, err := uuid.Parse(c); err != nil || u.String() != c {
			return p, Invalid{{"cursor", "is not a cursor herald issued; pass the nextCursor of the previous page"}}.Err()
		}
	}
	return p, nil
}

// list is the shape of every list answer.
type list[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

func newList[T any](data []T, next string) list[T] {
	if data == nil {
		data = []T{}
	}
	l := list[T]{Data: data}
	if next != "" {
		l.NextCursor = &next
	}
	return l
}

// ts formats a time as the API does: UTC, milliseconds, Z.
func ts(t time.Time) string { return t.UTC().Format(event.TimeFormat) }

func optTS(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}
