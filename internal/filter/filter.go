// Package filter owns webhook filters: a JSON object matched against an
// event's payload ({id, event, data, triggeredAt}) before its log is made,
// in the shape of MongoDB's query language, e.g.
//
//	{"data.productId": {"$in": ["p1", "p2"]}, "data.metadata.plan": "pro"}
//
// A filter is compiled once (Parse, which refuses a malformed one with the
// path and the operator at fault) and then evaluated in pure Go, in time
// and memory bounded by the filter's size times the payload's: Parse refuses
// a filter over MaxBytes, MaxNodes or MaxDepth, and evaluation walks each
// path down the payload's tree once, so no filter and payload together can
// cost more than MaxNodes walks of the payload.
package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Bounds on a filter, checked by Parse before anything else is done with it.
const (
	// MaxBytes is the largest filter, as JSON text.
	MaxBytes = 8 << 10
	// MaxDepth is how deeply $and, $or and $not may nest conditions.
	MaxDepth = 8
	// MaxNodes is how many conditions and listed values a filter may hold
	// in all; each is at most one walk of the payload when evaluated.
	MaxNodes = 256
	// MaxPathSegments is the most dotted segments one path may have.
	MaxPathSegments = 16
)

// Roots are the payload's fields a path may start with.
var Roots = []string{"id", "event", "data", "triggeredAt"}

// Operators lists every operator a filter may use.
var Operators = []string{"$eq", "$neq", "$in", "$nin", "$exists", "$gt", "$gte", "$lt", "$lte", "$prefix", "$and", "$or", "$not"}

// Error is a filter that cannot be used: Path is the dotted path at fault
// ("" for the filter as a whole), Operator the operator at fault ("" when
// none is), Detail what is wrong.
type Error struct {
	Path     string
	Operator string
	Detail   string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		fmt.Fprintf(&b, "path %q", e.Path)
	}
	if e.Operator != "" {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "operator %s", e.Operator)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	return b.String()
}

// Filter is a parsed filter, safe for concurrent use.
type Filter struct {
	root node
}

// node is one condition: all of and, any of or, not, or a test of a path.
type node struct {
	kind  string // "$and", "$or", "$not", or an operator on path
	path  string
	segs  []string
	value any // the operand, decoded (json.Number for numbers)
	list  []any
	kids  []node
	truth bool // $exists's operand
}

// Parse compiles a filter; a malformed one is refused with an *Error.
func Parse(b []byte) (*Filter, error) {
	if len(b) > MaxBytes {
		return nil, &Error{Detail: fmt.Sprintf("must be at most %d bytes of JSON", MaxBytes)}
	}
	v, err := decode(b)
	if err != nil {
		return nil, &Error{Detail: "must be a JSON object: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Detail: "must be a JSON object of paths and conditions"}
	}
	p := parser{}
	root, err := p.object(obj, 0)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root}, nil
}

// decode reads one JSON value with numbers kept as their text, refusing
// trailing data and nesting deeper than a filter could use.
func decode(b []byte) (any, error) {
	if depth(b) > 2*MaxDepth+4 {
		return nil, errors.New("nested too deeply")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return v, nil
}

// depth is the deepest nesting of objects and arrays in b, strings skipped.
func depth(b []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

type parser struct {
	nodes int
}

func (p *parser) count(path, op string) error {
	p.nodes++
	if p.nodes > MaxNodes {
		return &Error{Path: path, Operator: op, Detail: fmt.Sprintf("a filter may hold at most %d conditions and values", MaxNodes)}
	}
	return nil
}

// object parses a filter object: its keys are paths or $and, $or, $not,
// all of which must hold.
func (p *parser) object(obj map[string]any, d int) (node, error) {
	if d > MaxDepth {
		return node{}, &Error{Detail: fmt.Sprintf("conditions may nest at most %d levels deep", MaxDepth)}
	}
	if len(obj) == 0 && d > 0 {
		return node{}, &Error{Detail: "a nested filter must not be empty"}
	}
	keys := sortedKeys(obj)
	all := node{kind: "$and"}
	for _, k := range keys {
		n, err := p.entry(k, obj[k], d)
		if err != nil {
			return node{}, err
		}
		all.kids = append(all.kids, n)
	}
	if len(all.kids) == 1 {
		return all.kids[0], nil
	}
	return all, nil
}

func (p *parser) entry(k string, v any, d int) (node, error) {
	switch k {
	case "$and", "$or":
		if err := p.count("", k); err != nil {
			return node{}, err
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return node{}, &Error{Operator: k, Detail: "takes a non-empty array of filters"}
		}
		n := node{kind: k}
		for _, item := range list {
			obj, ok := item.(map[string]any)
			if !ok {
				return node{}, &Error{Operator: k, Detail: "takes a non-empty array of filters (objects)"}
			}
			kid, err := p.object(obj, d+1)
			if err != nil {
				return node{}, err
			}
			n.kids = append(n.kids, kid)
		}
		return n, nil
	case "$not":
		if err := p.count("", k); err != nil {
			return node{}, err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return node{}, &Error{Operator: k, Detail: "takes a filter (an object)"}
		}
		kid, err := p.object(obj, d+1)
		if err != nil {
			return node{}, err
		}
		return node{kind: "$not", kids: []node{kid}}, nil
	}
	if strings.HasPrefix(k, "$") {
		return node{}, &Error{Operator: k, Detail: "is not an operator that may stand in place of a path; use $and, $or or $not"}
	}
	segs, err := parsePath(k)
	if err != nil {
		return node{}, err
	}
	return p.conditions(k, segs, v, d)
}

// parsePath checks a dotted path: a known root, no empty segment.
func parsePath(path string) ([]string, error) {
	segs := strings.Split(path, ".")
	if len(segs) > MaxPathSegments {
		return nil, &Error{Path: path, Detail: fmt.Sprintf("must have at most %d segments", MaxPathSegments)}
	}
	for _, s := range segs {
		if s == "" {
			return nil, &Error{Path: path, Detail: "must not have an empty segment"}
		}
	}
	for _, r := range Roots {
		if segs[0] == r {
			return segs, nil
		}
	}
	return nil, &Error{Path: path, Detail: "must start with one of the payload's fields: " + strings.Join(Roots, ", ") + ` (e.g. "data.` + path + `")`}
}

// conditions parses what a path must satisfy: a plain value (equality) or
// an object of operators, all of which must hold.
func (p *parser) conditions(path string, segs []string, v any, d int) (node, error) {
	obj, isObj := v.(map[string]any)
	if !isObj || !hasOperator(obj) {
		if err := p.count(path, "$eq"); err != nil {
			return node{}, err
		}
		return node{kind: "$eq", path: path, segs: segs, value: v}, nil
	}
	all := node{kind: "$and"}
	for _, op := range sortedKeys(obj) {
		n, err := p.operator(path, segs, op, obj[op], d)
		if err != nil {
			return node{}, err
		}
		all.kids = append(all.kids, n)
	}
	if len(all.kids) == 1 {
		return all.kids[0], nil
	}
	return all, nil
}

func hasOperator(obj map[string]any) bool {
	for k := range obj {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func (p *parser) operator(path string, segs []string, op string, v any, d int) (node, error) {
	if err := p.count(path, op); err != nil {
		return node{}, err
	}
	n := node{kind: op, path: path, segs: segs, value: v}
	fail := func(detail string) (node, error) { return node{}, &Error{Path: path, Operator: op, Detail: detail} }
	switch op {
	case "$eq", "$neq":
	case "$in", "$nin":
		list, ok := v.([]any)
		if !ok {
			return fail("takes an array of values")
		}
		for range list {
			if err := p.count(path, op); err != nil {
				return node{}, err
			}
		}
		n.list = list
	case "$exists":
		b, ok := v.(bool)
		if !ok {
			return fail("takes true or false")
		}
		n.truth = b
	case "$gt", "$gte", "$lt", "$lte":
		switch v.(type) {
		case json.Number, string:
		default:
			return fail("takes a number or a string")
		}
	case "$prefix":
		if _, ok := v.(string); !ok {
			return fail("takes a string")
		}
	case "$not":
		obj, ok := v.(map[string]any)
		if !ok || !hasOperator(obj) {
			return fail("takes an object of operators, e.g. {\"$in\": [...]}")
		}
		if d+1 > MaxDepth {
			return fail(fmt.Sprintf("conditions may nest at most %d levels deep", MaxDepth))
		}
		kid, err := p.conditions(path, segs, obj, d+1)
		if err != nil {
			return node{}, err
		}
		n.kids, n.value = []node{kid}, nil
	default:
		if strings.HasPrefix(op, "$") {
			return fail("is not an operator; use one of " + strings.Join(Operators, " "))
		}
		return node{}, &Error{Path: path, Detail: fmt.Sprintf("mixes operators with the field %q; use either a value or an object of operators", op)}
	}
	return n, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Match reports whether payload (a JSON document) passes f. A payload that
// is not JSON matches nothing.
func (f *Filter) Match(payload []byte) bool {
	v, err := decode(payload)
	if err != nil {
		return false
	}
	return f.root.eval(v, nil)
}

// MatchValue is Match on a payload already decoded with json.Decoder's
// UseNumber, as Decode returns it.
func (f *Filter) MatchValue(payload any) bool { return f.root.eval(payload, nil) }

// Explain reports whether payload passes f, and why, one line per
// condition tested, in a person's words.
func (f *Filter) Explain(payload any) (bool, []string) {
	var lines []string
	ok := f.root.eval(payload, &lines)
	return ok, lines
}

// Decode reads a payload for MatchValue or Explain.
func Decode(payload []byte) (any, error) { return decode(payload) }

func (n node) eval(doc any, why *[]string) bool {
	switch n.kind {
	case "$and":
		for _, k := range n.kids {
			if !k.eval(doc, why) {
				return false
			}
		}
		return true
	case "$or":
		for _, k := range n.kids {
			if k.eval(doc, why) {
				return true
			}
		}
		return false
	case "$not":
		if n.path != "" {
			ok := !n.kids[0].eval(doc, nil)
			say(why, "%s $not: %s", n.path, holds(ok))
			return ok
		}
		ok := !n.kids[0].eval(doc, nil)
		say(why, "$not: %s", holds(ok))
		return ok
	}
	found := resolve(doc, n.segs)
	ok := n.test(found)
	say(why, "%s %s %s: %s (found %s)", n.path, n.kind, operand(n), holds(ok), show(found))
	return ok
}

// test applies a path's operator to the values found at it: one for a
// plain path, one per element when the path crosses an array, none when
// it leads nowhere. A test holds when any value found passes it; $neq, $nin
// and $exists false hold when none does.
func (n node) test(found []any) bool {
	switch n.kind {
	case "$eq":
		return anyOf(found, func(v any) bool { return equal(v, n.value) })
	case "$neq":
		return !anyOf(found, func(v any) bool { return equal(v, n.value) })
	case "$in":
		return anyOf(found, func(v any) bool { return in(v, n.list) })
	case "$nin":
		return !anyOf(found, func(v any) bool { return in(v, n.list) })
	case "$exists":
		return (len(found) > 0) == n.truth
	case "$prefix":
		p := n.value.(string)
		return anyOf(found, func(v any) bool { s, ok := v.(string); return ok && strings.HasPrefix(s, p) })
	case "$gt", "$gte", "$lt", "$lte":
		return anyOf(found, func(v any) bool {
			c, ok := compare(v, n.value)
			if !ok {
				return false
			}
			switch n.kind {
			case "$gt":
				return c > 0
			case "$gte":
				return c >= 0
			case "$lt":
				return c < 0
			}
			return c <= 0
		})
	}
	return false
}

func anyOf(found []any, f func(any) bool) bool {
	for _, v := range found {
		if f(v) {
			return true
		}
	}
	return false
}

func in(v any, list []any) bool {
	for _, w := range list {
		if equal(v, w) {
			return true
		}
	}
	return false
}

// resolve follows a dotted path down doc. An array met on the way is
// crossed: a numeric segment picks its element, any other applies the rest
// of the path to each element, and an array at the end of the path offers
// itself and each of its elements. Each value of the payload is reached by
// at most one route, so a path finds at most as many values as the payload
// holds.
func resolve(doc any, segs []string) []any {
	var out []any
	var walk func(v any, segs []string, crossed bool)
	walk = func(v any, segs []string, crossed bool) {
		if len(segs) == 0 {
			out = append(out, v)
			if arr, ok := v.([]any); ok && !crossed {
				out = append(out, arr...)
			}
			return
		}
		switch t := v.(type) {
		case map[string]any:
			if next, ok := t[segs[0]]; ok {
				walk(next, segs[1:], false)
			}
		case []any:
			if i, err := strconv.Atoi(segs[0]); err == nil && i >= 0 && strconv.Itoa(i) == segs[0] {
				if i < len(t) {
					walk(t[i], segs[1:], false)
				}
				return
			}
			for _, e := range t {
				if _, isArr := e.([]any); !isArr { // nested arrays are crossed by index only
					walk(e, segs, true)
				}
			}
		}
	}
	walk(doc, segs, false)
	return out
}

// equal is JSON equality: numbers by value, objects and arrays deeply.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		c, ok := compareNumbers(x, y)
		return ok && c == 0
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// compare orders two numbers, or two strings (byte-wise, which orders
// herald's RFC 3339 times in time order); anything else is not ordered.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case json.Number:
		if y, ok := b.(json.Number); ok {
			return compareNumbers(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	}
	return 0, false
}

// compareNumbers compares as 64-bit floats: exact for integers up to 2^53,
// and bounded in cost whatever the digits (a number's text never becomes
// an arbitrary-precision value).
func compareNumbers(a, b json.Number) (int, bool) {
	x, err1 := strconv.ParseFloat(string(a), 64)
	y, err2 := strconv.ParseFloat(string(b), 64)
	if err1 != nil && !isRange(err1) || err2 != nil && !isRange(err2) {
		return 0, false
	}
	switch {
	case x < y:
		return -1, true
	case x > y:
		return 1, true
	}
	return 0, true
}

func isRange(err error) bool { return errors.Is(err, strconv.ErrRange) }

func say(why *[]string, format string, args ...any) {
	if why != nil {
		*why = append(*why, fmt.Sprintf(format, args...))
	}
}

func holds(ok bool) string {
	if ok {
		return "holds"
	}
	return "fails"
}

func operand(n node) string {
	if n.kind == "$in" || n.kind == "$nin" {
		return compact(n.list)
	}
	if n.kind == "$exists" {
		return strconv.FormatBool(n.truth)
	}
	return compact(n.value)
}

// show lists the values a path found, shortened for a person to read.
func show(found []any) string {
	if len(found) == 0 {
		return "nothing"
	}
	var parts []string
	for i, v := range found {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(found)-5))
			break
		}
		parts = append(parts, compact(v))
	}
	return strings.Join(parts, ", ")
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
