package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldhq/herald/internal/openapi"
)

// TestCommittedJSONCurrent fails when openapi.json was not regenerated
// after a change to openapi.yaml: herald serves the JSON, so a stale one
// would serve an old reference.
func TestCommittedJSONCurrent(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/openapi/openapi.json is not what openapi.yaml generates (%d bytes; want %d); run go generate ./internal/openapi", len(got), len(want))
	}
}

// TestRun checks that the command writes what render makes, and refuses a
// document that is not OpenAPI.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		ok         bool
	}{
		{"document", "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n", true},
		{"not yaml", "openapi: [3.0.3\n", false},
	}
	for _, tt := range tests {
		in := filepath.Join(dir, tt.name+".yaml")
		out := filepath.Join(dir, tt.name+".json")
		if err := os.WriteFile(in, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		err := run(in, out)
		if (err == nil) != tt.ok {
			t.Fatalf("%s: run error = %v; want ok = %v", tt.name, err, tt.ok)
		}
		if !tt.ok {
			continue
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := render([]byte(tt.yaml))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wrote %s; want %s", tt.name, got, want)
		}
	}
}

// TestServedAsBefore checks that GET /v3/openapi.json answers the bytes
// herald answered when it converted the YAML at start-up (loaded with
// kin-openapi, marshalled compact), not merely an equivalent document.
func TestServedAsBefore(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := openapi.JSON(); !bytes.Equal(got, want) {
		t.Errorf("openapi.JSON() is %d bytes, not the %d that converting the YAML at start-up gave", len(got), len(want))
	}
}
