package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/internal/validator"
)

// TestCheckTokens: the body walk names a duplicate key or a control
// character by its path, exempts metadata's strings, and refuses nesting
// past jsonlimit.MaxDepth, taking a body nested exactly that deep.
func TestCheckTokens(t *testing.T) {
	t.Parallel()
	// deep nests inner in n objects.
	deep := func(n int, inner string) string {
		return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
	}
	for _, tc := range []struct {
		body   string
		status int    // 0: accepted
		field  string // the field the problem names
		detail string
	}{
		{`{"name":"a"}`, 0, "", ""},
		{`{"name":"a","name":"b"}`, 400, "name", "name appears more than once in its object"},
		{`{"name":"a","metadata":{"plan":"x","n":{"a":1},"plan":"y"}}`, 400, "metadata.plan", "metadata.plan appears more than once in its object"},
		{`{"metadata":{"list":[{"a":1},{"a":1,"a":2}]}}`, 400, "metadata.list[1].a", "metadata.list[1].a appears more than once in its object"},
		{`{"metadata":{"a":{"k":1},"b":{"k":1}}}`, 0, "", ""},
		{`[{"a":1},[[1],{"b":1,"b":2}]]`, 400, "[1][1].b", "[1][1].b appears more than once in its object"},
		{`{"events":["license.created","a\u0000b"]}`, 422, "events[1]", "events[1]: must not hold control characters such as U+0000"},
		{`{"a":[1,{"b":"\n"}]}`, 422, "a[1].b", "a[1].b: must not hold control characters such as U+000A"},
		{`{"metadata":{"note":"line\nbreak \u0000"}}`, 0, "", ""},
		{`{"metadata":["\u0001",{"k":"\t"}]}`, 0, "", ""},
		// The exemption is by the path's first name, as the path reads.
		{`{"metadata.x":"\n"}`, 0, "", ""},
		{`{"metadata[0]":"\n"}`, 0, "", ""},
		{`{"":{"metadata":"\n"}}`, 0, "", ""},
		{`{"":{"a":{"metadata":"\n"}}}`, 422, "a.metadata", "a.metadata: must not hold control characters such as U+000A"},
		{`[{"metadata":"\n"}]`, 422, "[0].metadata", "[0].metadata: must not hold control characters such as U+000A"},
		{`"\n"`, 422, "", ": must not hold control characters such as U+000A"},
		// A syntax error ends the walk; the decoder describes it.
		{`{"a":1 "a":2}`, 0, "", ""},
		{`{"a":"\n"`, 422, "a", "a: must not hold control characters such as U+000A"},
		// Nesting: exactly MaxDepth levels pass, one more is refused,
		// whatever comes after it.
		{deep(jsonlimit.MaxDepth, "1"), 0, "", ""},
		{deep(jsonlimit.MaxDepth, "[]"), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{deep(jsonlimit.MaxDepth, `{"x":1,"x":2}`), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{`{"a":1,"a":` + strings.Repeat("[", 100), 400, "a", "a appears more than once in its object"},
		// A lone surrogate escape is no character: refused, in metadata too;
		// a pair is one.
		{`{"name":"\ud800"}`, 422, "name", "name: holds a lone UTF-16 surrogate escape"},
		{`{"name":"a\udc00b"}`, 422, "name", "name: holds a lone UTF-16 surrogate escape"},
		{`{"name":"\ud83d\ud83d\ude80"}`, 422, "name", "name: holds a lone UTF-16 surrogate escape"},
		{`{"name":"\ud83dx"}`, 422, "name", "name: holds a lone UTF-16 surrogate escape"},
		{`{"metadata":{"n":"\ud800"}}`, 422, "metadata.n", "metadata.n: holds a lone UTF-16 surrogate escape"},
		{`{"\ud800":1}`, 422, "body", "body: holds a lone UTF-16 surrogate escape"},
		{`{"name":"\ud83d\ude80 \u00e9"}`, 0, "", ""},
	} {
		err := checkBody([]byte(tc.body))
		var p *Problem
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%.80s: %v; want it accepted", tc.body, err)
		case tc.status == 0:
		case !errors.As(err, &p):
			t.Errorf("%.80s: %v; want a %d problem", tc.body, err, tc.status)
		case p.Status != tc.status || !strings.HasPrefix(p.Detail, tc.detail) || fieldOf(p) != tc.field:
			t.Errorf("%.80s: %d %q naming %q; want %d %q naming %q", tc.body, p.Status, p.Detail, fieldOf(p), tc.status, tc.detail, tc.field)
		}
	}
	var p *Problem
	if err := checkTokens([]byte(deep(jsonlimit.MaxDepth+1, "1"))); !errors.As(err, &p) ||
		p.Type != "https://herald.dev/problems/too-deep" || p.Title != "Nesting too deep" {
		t.Errorf("too deep: %v; want the too-deep problem", err)
	}
}

func fieldOf(p *Problem) string {
	if len(p.Errors) == 0 {
		return ""
	}
	return p.Errors[0].Field
}

// maxAllocPerByte bounds what the scan allocates per byte of body. It
// allocates only for object keys (each key's string and its place in the
// object's set, about 7.4 bytes per byte for an object of 100,000 keys, the
// worst shape) and for its stack of at most MaxDepth frames; the other
// shapes cost next to nothing. The token walk it replaced cost up to 60
// per byte (json.Decoder.Token's 120 bytes a token), and before paths were
// built only for errors, a body 20,000 brackets deep (40 KB) allocated
// 16,000 bytes per byte, 640 MB.
const maxAllocPerByte = 16

// TestCheckTokensAllocatesLinearly feeds the scan the worst shapes at the
// largest body the API reads, and the bracket bombs, and holds
// what it allocates to a fixed multiple of the body. Not parallel: the
// count is the whole process's.
func TestCheckTokensAllocatesLinearly(t *testing.T) {
	shapes := jsonlimittest.Shapes(MaxBody)
	for _, n := range []int{40_000, 200_000} {
		shapes = append(shapes, jsonlimittest.Shape{Name: fmt.Sprintf("%d brackets", n),
			Body: []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2)), Deep: true})
	}
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			var err error
			limit := uint64(maxAllocPerByte * len(s.Body))
			got := jsonlimittest.Allocated(limit, func() { err = checkTokens(s.Body) })
			t.Logf("%d bytes: %d allocated (%.1f per byte)", len(s.Body), got, float64(got)/float64(len(s.Body)))
			if got > limit {
				t.Errorf("%d bytes allocated for %d bytes of body; want at most %d (%d per byte)", got, len(s.Body), limit, maxAllocPerByte)
			}
			var p *Problem
			switch {
			case s.Deep && (!errors.As(err, &p) || p.Detail != jsonlimit.ErrTooDeep.Error()):
				t.Errorf("checkTokens: %v; want the nesting refused", err)
			case !s.Deep && err != nil:
				t.Errorf("checkTokens: %v; want it accepted", err)
			}
		})
	}
}

// TestCheckTokensScan: the byte scan reads strings as encoding/json does
// (escaped quotes and brackets, \u escapes, surrogates, raw DEL and C1),
// counts nesting only outside strings, takes JSON's whitespace, and stops
// silently at the first syntax error, reporting what came before it. Each
// case also agrees with tokenWalk, the walk the scan replaced.
func TestCheckTokensScan(t *testing.T) {
	t.Parallel()
	const (
		tooDeep = "JSON nesting deeper than 64 levels is refused"
		u0a     = "must not hold control characters such as U+000A"
	)
	open, close := strings.Repeat("[", jsonlimit.MaxDepth), strings.Repeat("]", jsonlimit.MaxDepth)
	for _, tc := range []struct {
		body   string
		status int    // 0: accepted
		field  string // the field the problem names
		detail string
	}{
		// Strings: what is inside one is no structure.
		{`{"a":"x\"]}{["}`, 0, "", ""},
		{`{"a":"\\"}`, 0, "", ""},
		{`{"a":"\\\n"}`, 422, "a", "a: " + u0a},
		{`{"a":"\"\n"}`, 422, "a", "a: " + u0a},
		{`{"a":"\/\b"}`, 422, "a", "a: must not hold control characters such as U+0008"},
		{`["ok","\t"]`, 422, "[1]", "[1]: must not hold control characters such as U+0009"},
		// \u escapes: C0, DEL and C1 are controls; a surrogate pair and a
		// lone surrogate (U+FFFD) are not, and what follows a lone one is
		// read on its own.
		{`{"a":"\u0041\u00a0\u00A0"}`, 0, "", ""},
		{`{"a":"\u001f"}`, 422, "a", "a: must not hold control characters such as U+001F"},
		{`{"a":"\u007F"}`, 422, "a", "a: must not hold control characters such as U+007F"},
		{`{"a":"\u0085"}`, 422, "a", "a: must not hold control characters such as U+0085"},
		{`{"a":"\u009f\u0000"}`, 422, "a", "a: must not hold control characters such as U+009F"},
		{`{"a":"\ud83d\ude00 \ud800 \udfff"}`, 0, "", ""},
		{`{"a":"\uD800\u0001"}`, 422, "a", "a: must not hold control characters such as U+0001"},
		// Raw bytes: DEL and C1 (C2 80 to C2 9F) are controls, U+00A0
		// (C2 A0) is not.
		{"{\"a\":\"x\x7f\"}", 422, "a", "a: must not hold control characters such as U+007F"},
		{"{\"a\":\"\u0085\"}", 422, "a", "a: must not hold control characters such as U+0085"},
		{"{\"a\":\"\u00a0é\u2028\"}", 0, "", ""},
		// Keys are compared, named and matched to metadata by their value.
		{`{"a":1,"\u0061":2}`, 400, "a", "a appears more than once in its object"},
		{`{"a\"b":1,"a\"b":2}`, 400, `a"b`, `a"b appears more than once in its object`},
		{`{"a\nb":{"c":1,"c":2}}`, 400, "a\nb.c", "a\nb.c appears more than once in its object"},
		{`{"metad\u0061ta":"\n"}`, 0, "", ""},
		{`{"metadata":{"k":"\n"},"b":"\n"}`, 422, "b", "b: " + u0a},
		// Whitespace, JSON's four, anywhere between tokens.
		{" \t\r\n{ \"a\" :\n[ 1 ,\t\"\\n\" ] } ", 422, "a[1]", "a[1]: " + u0a},
		// Nesting: exactly MaxDepth passes, one more is refused; brackets
		// in strings and whitespace count for nothing.
		{open + close, 0, "", ""},
		{open + `"]]]][[[["` + close, 0, "", ""},
		{open + "[" + close + "]", 400, "", tooDeep},
		{strings.Repeat("[ ", jsonlimit.MaxDepth+1), 400, "", tooDeep},
		{`{"metadata":` + open[1:] + `{"x":` + close[1:] + `}`, 400, "", tooDeep},
		{`{"metadata":` + open[2:] + `{}` + close[2:] + `}`, 0, "", ""},
		// More than one value: each is read, as the walk read them, and
		// the decoder then refuses what follows the first.
		{`{"a":1}{"b":"\n"}`, 422, "b", "b: " + u0a},
		{`1 2"\n"`, 422, "", ": " + u0a},
		{`01"\n"`, 422, "", ": " + u0a},
		{`true"\n"`, 422, "", ": " + u0a},
		// Numbers and literals JSON has.
		{`[-0.5E-3,1e+5,0,10,true,false,null,"\n"]`, 422, "[7]", "[7]: " + u0a},
		// A syntax error ends the scan, before what follows it.
		{`{"a":1,}"\n"`, 0, "", ""},
		{`[1,]"\n"`, 0, "", ""},
		{`{"a" "\n"}`, 0, "", ""},
		{`{"a":1 "b":` + open + `[`, 0, "", ""},
		{`["\n`, 0, "", ""},
		{`["\x","\n"]`, 0, "", ""},
		{`["\u12","\n"]`, 0, "", ""},
		{`["\u12g4","\n"]`, 0, "", ""},
		{"[\"\x01\",\"\\n\"]", 0, "", ""},
		{`[01,"\n"]`, 0, "", ""},
		{`[-,"\n"]`, 0, "", ""},
		{`[1.,"\n"]`, 0, "", ""},
		{`[.5,"\n"]`, 0, "", ""},
		{`[1e,"\n"]`, 0, "", ""},
		{`[1e+,"\n"]`, 0, "", ""},
		{`[tru,"\n"]`, 0, "", ""},
		{`[nul`, 0, "", ""},
		{`{1:"\n"}`, 0, "", ""},
		{`{"a":1}]["\n"]`, 0, "", ""},
		{`[1 2,"\n"]`, 0, "", ""},
		{`{"a"::"\n"}`, 0, "", ""},
		{`,"\n"`, 0, "", ""},
		// A key before the error is still read.
		{`{"a":1,"a"`, 400, "a", "a appears more than once in its object"},
	} {
		err := checkTokens([]byte(tc.body))
		var p *Problem
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%.80q: %v; want it accepted", tc.body, err)
		case tc.status == 0:
		case !errors.As(err, &p):
			t.Errorf("%.80q: %v; want a %d problem", tc.body, err, tc.status)
		case p.Status != tc.status || !strings.HasPrefix(p.Detail, tc.detail) || fieldOf(p) != tc.field:
			t.Errorf("%.80q: %d %q naming %q; want %d %q naming %q", tc.body, p.Status, p.Detail, fieldOf(p), tc.status, tc.detail, tc.field)
		}
		if want := tokenWalk([]byte(tc.body)); !reflect.DeepEqual(err, want) {
			t.Errorf("%.80q: %v; the token walk says %v", tc.body, err, want)
		}
	}
}

// FuzzCheckTokens wants the byte scan's verdict on any UTF-8 body (decode
// refuses the others first) to be the token walk's, problem for problem.
func FuzzCheckTokens(f *testing.F) {
	for _, s := range []string{
		`{"name":"a"}`, `{"name":"a","name":"b"}`, `{"metadata":{"list":[{"a":1},{"a":1,"a":2}]}}`,
		`{"events":["license.created","a\u0000b"]}`, `{"metadata":{"note":"line\nbreak \u0000"}}`,
		`{"metadata.x":"\n"}`, `{"":{"a":{"metadata":"\n"}}}`, `{"a":"x\"]}{["}`, `{"a":"\uD800\u0001"}`,
		"{\"a\":\"x\x7f\u0085\"}", `{"a":1,"\u0061":2}`, `[-0.5E-3,1e+5,0,true,false,null,"\n"]`,
		`{"a":1}{"b":"\n"}`, `01"\n"`, `{"a":1,}"\n"`, `[1.,"\n"]`, ` [ {"a" : [ ] , "b" : { } } ] `,
		strings.Repeat("[", jsonlimit.MaxDepth) + strings.Repeat("]", jsonlimit.MaxDepth),
		strings.Repeat(`{"a":`, jsonlimit.MaxDepth+1) + "1" + strings.Repeat("}", jsonlimit.MaxDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) {
			return
		}
		got, want := checkTokens(body), tokenWalk(body)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: the scan says %v (%#v); the token walk says %v (%#v)", body, got, got, want, want)
		}
	})
}

// tokenWalk is checkTokens as it was before the byte scan: the body's
// tokens walked with json.Decoder.Token. It stays as the reference the
// scan must agree with.
func tokenWalk(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				advance(&stack[len(stack)-1])
			}
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && !top.wantValue {
			key := tok.(string) // the decoder returns only strings here
			if _, dup := top.keys[key]; dup {
				top.key = key
				return duplicateKey(path(stack))
			}
			if top.keys == nil {
				top.keys = map[string]struct{}{}
			}
			top.keys[key], top.key, top.wantValue = struct{}{}, key, true
			continue
		}
		root, rootDone := "", false
		if top != nil {
			root, rootDone = top.child()
		}
		switch t := tok.(type) {
		case json.Delim:
			if len(stack) == jsonlimit.MaxDepth {
				return tooDeep()
			}
			stack = append(stack, frame{object: t == '{', root: root, rootDone: rootDone})
			continue
		case string:
			if !freeText[root] {
				if d := validator.SingleLine(t); d != "" {
					return Invalid{{path(stack), d}}.Err()
				}
			}
		}
		advance(top)
	}
}

// BenchmarkCheckTokens is the body check alone on the worst shapes at the
// largest body the API reads: the byte scan, and the token walk it
// replaced for comparison.
func BenchmarkCheckTokens(b *testing.B) {
	for _, check := range []struct {
		name string
		f    func([]byte) error
	}{{"scan", checkTokens}, {"walk", tokenWalk}} {
		for _, s := range jsonlimittest.Shapes(MaxBody) {
			b.Run(check.name+"/"+s.Name, func(b *testing.B) {
				b.SetBytes(int64(len(s.Body)))
				b.ReportAllocs()
				for b.Loop() {
					check.f(s.Body)
				}
			})
		}
	}
}
