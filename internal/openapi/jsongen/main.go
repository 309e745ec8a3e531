// Command jsongen writes the API reference as JSON (openapi.json) from its
// YAML source (openapi.yaml), for package openapi to embed and serve. It
// runs at build time, through go generate in package openapi, so that the
// YAML parser and OpenAPI loader it uses (kin-openapi) stay out of the
// herald binary. A test in this package fails when the committed JSON is
// not what the YAML generates.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/getkin/kin-openapi/openapi3"
)

func main() {
	in := flag.String("in", "openapi.yaml", "the YAML reference to read")
	out := flag.String("out", "openapi.json", "the JSON file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		log.Fatalf("jsongen: %v", err)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read reference: %w", err)
	}
	b, err := render(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write JSON reference: %w", err)
	}
	return nil
}

// render converts the YAML document to indented JSON. It loads the document
// with kin-openapi, as herald did at start-up before the JSON was
// generated, so the served document keeps the same content: references
// kept as $ref, keys in kin-openapi's order. Loading also refuses a
// document that does not parse as OpenAPI. Indented, so a change to the
// YAML shows as a readable diff of the JSON.
func render(yaml []byte) ([]byte, error) {
	doc, err := openapi3.NewLoader().LoadFromData(yaml)
	if err != nil {
		return nil, fmt.Errorf("load reference: %w", err)
	}
	compact, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal reference: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("indent reference: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
