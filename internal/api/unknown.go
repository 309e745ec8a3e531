package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// unknownFieldPath returns the path (limits.bogus, headers[0].x) of the
// first field of body that v's type does not take, or "": encoding/json
// names an unknown field by its key alone, and a nested one ("bogus" for
// {"limits":{"bogus":1}}) then reads as a field of the top. Only called
// for a body decode refused, so its cost is the error's.
func unknownFieldPath(body []byte, v any) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	path, _ := walkKnown(dec, reflect.TypeOf(v), "")
	return path
}

// walkKnown reads one value from dec against type t and returns the path of
// the first unknown field in it; ok is false when the body ended early.
func walkKnown(dec *json.Decoder, t reflect.Type, path string) (unknown string, ok bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return "", false
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return "", true
	}
	free := t == nil || t == reflect.TypeOf(json.RawMessage(nil)) || t.Kind() == reflect.Interface
	switch {
	case d == '{':
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", false
			}
			key, _ := kt.(string)
			var elem reflect.Type
			switch {
			case free:
			case t.Kind() == reflect.Map:
				elem = t.Elem()
			case t.Kind() == reflect.Struct:
				f, found := fieldByJSONName(t, key)
				if !found {
					return join(path, key), true
				}
				elem = f
			}
			if u, ok := walkKnown(dec, elem, join(path, key)); u != "" || !ok {
				return u, ok
			}
		}
	case d == '[':
		var elem reflect.Type
		if !free && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if u, ok := walkKnown(dec, elem, path+"["+strconv.Itoa(i)+"]"); u != "" || !ok {
				return u, ok
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return "", false
	}
	return "", true
}

// fieldByJSONName finds the type of the field of struct t that a JSON key
// fills, as encoding/json matches them (its tag's name, or its own name,
// an exact match first, then one ignoring case; embedded structs' fields
// as the struct's own).
func fieldByJSONName(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if got, ok := fieldByJSONName(ft, key); ok {
					return got, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
