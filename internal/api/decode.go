package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// MaxBody is the largest request body the API reads.
const MaxBody = 1 << 20

// decode reads a JSON object into v, refusing unknown fields, trailing data,
// non-JSON content types and bodies over MaxBody, with a problem that names
// the field where one is at fault. An empty body decodes as {} when optional.
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
				"send the body as JSON, with Content-Type: application/json")
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
				"send the body as UTF-8 (charset="+cs+" is not accepted)")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem(http.StatusRequestEntityTooLarge, "body-too-large", "Body too large",
				fmt.Sprintf("the body must be at most %d bytes", MaxBody))
		}
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body could not be read")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if optional {
			return nil
		}
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body must be a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	// More() is false before a stray } or ], so ask for one more value.
	if _, err := dec.Token(); err != io.EOF {
		return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", "the body must hold one JSON object and nothing after it")
	}
	return nil
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
