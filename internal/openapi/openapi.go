// Package openapi holds herald's API reference: the OpenAPI 3.1 document
// that describes every call under /v3, the operational endpoints and the
// delivery format. The API serves it at GET /v3/openapi.json, and the API's
// integration tests check every request and response against it (see
// package openapitest).
//
// openapi.yaml is the source; openapi.json is generated from it by
// go generate (command jsongen) and committed, so herald embeds JSON and
// links no YAML or OpenAPI library.
package openapi

//go:generate go run ./jsongen -in openapi.yaml -out openapi.json

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"sync"
)

//go:embed openapi.json
var document []byte

// compact is the document without the indentation kept for readable diffs:
// a third fewer bytes on the wire, and the same bytes herald served when it
// converted the YAML at start-up.
var compact = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, document); err != nil {
		// jsongen wrote the file with encoding/json and a test compares it
		// with what the YAML generates, so this is a broken build.
		panic("openapi: embedded openapi.json is not JSON: " + err.Error())
	}
	return b.Bytes()
})

// JSON returns the document as JSON, as served at GET /v3/openapi.json.
// Each call returns a fresh copy.
func JSON() []byte {
	return bytes.Clone(compact())
}
