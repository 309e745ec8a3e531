// Package openapi holds herald's API reference: the OpenAPI 3.0.3 document
// that describes every call under /v3, the operational endpoints and the
// delivery format. The API serves it at GET /v3/openapi.json, and the API's
// integration tests check every request and response against it (see
// package openapitest).
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var document []byte

// Load parses the document and resolves its references. Each call returns a
// new *openapi3.T that the caller may change. Load does not validate the
// document; the package's tests do.
func Load() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	return doc, nil
}

var jsonDocument = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal openapi document: %w", err)
	}
	return b, nil
})

// JSON returns the document converted to JSON, as served at
// GET /v3/openapi.json. The conversion runs once; each call returns a fresh
// copy. JSON panics if the embedded document does not load, which the
// package's tests rule out.
func JSON() []byte {
	b, err := jsonDocument()
	if err != nil {
		panic(err)
	}
	return bytes.Clone(b)
}
