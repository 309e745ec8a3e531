package openapi

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// The query parameters each call takes are read from the reference, so
// that the API refuses the ones it does not take from the same source that
// documents them: a client's typo (?webhook= for ?webhookId=) would
// otherwise be ignored and answer every log of the account, unfiltered.

// operation is one call of the reference: its method, its path cut in
// segments ("" stands for a path parameter), and the query parameters it
// takes.
type operation struct {
	method string
	path   string
	segs   []string
	query  []string
}

// operations are the reference's calls, read once.
var operations = sync.OnceValue(func() []operation {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		panic("openapi: embedded openapi.json is not JSON: " + err.Error())
	}
	resolve := func(ps []parameter) []string {
		var names []string
		for _, p := range ps {
			if ref, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = doc.Components.Parameters[ref]
			}
			if p.In == "query" {
				names = append(names, p.Name)
			}
		}
		return names
	}
	var ops []operation
	for path, item := range doc.Paths {
		var shared []parameter
		if raw, ok := item["parameters"]; ok {
			json.Unmarshal(raw, &shared)
		}
		for method, raw := range item {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			var op struct {
				Parameters []parameter `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				continue
			}
			query := resolve(append(slices.Clone(shared), op.Parameters...))
			slices.Sort(query)
			ops = append(ops, operation{method: strings.ToUpper(method), path: path, segs: segments(path), query: slices.Compact(query)})
		}
	}
	return ops
})

// parameter is a parameter of the reference, or a reference to one.
type parameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// segments cuts a path at its slashes, a path parameter ({id}) as "".
func segments(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = ""
		}
	}
	return segs
}

// Query returns the query parameters that the reference's call at method
// and path (a request's path, such as /v3/webhooks/0193…) takes, and the
// call's path as the reference writes it; ok is false when the reference
// has no such call. Where two calls match (/v3/webhooks/filter-test and
// /v3/webhooks/{id}), the one with more literal segments is the call, as
// net/http's routing picks it.
func Query(method, path string) (params []string, call string, ok bool) {
	got := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLiteral := -1, -1
	ops := operations()
	for i, op := range ops {
		if op.method != method || len(op.segs) != len(got) {
			continue
		}
		literal, match := 0, true
		for j, s := range op.segs {
			switch {
			case s == "":
				match = match && got[j] != ""
			case s == got[j]:
				literal++
			default:
				match = false
			}
		}
		if match && literal > bestLiteral {
			best, bestLiteral = i, literal
		}
	}
	if best < 0 {
		return nil, "", false
	}
	return ops[best].query, ops[best].method + " " + ops[best].path, true
}

// UnknownQuery returns the names of the query parameters of a request to
// method and path that the reference's call does not take, in their order
// in rawQuery, each once, and the call as the reference writes it; none
// when the reference has no such call.
func UnknownQuery(method, path, rawQuery string) (unknown []string, call string, takes []string) {
	if rawQuery == "" {
		return nil, "", nil
	}
	takes, call, ok := Query(method, path)
	if !ok {
		return nil, "", nil
	}
	for _, pair := range strings.Split(rawQuery, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if name == "" {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if !slices.Contains(takes, name) && !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
	}
	return unknown, call, takes
}
