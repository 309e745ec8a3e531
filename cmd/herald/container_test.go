package main_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile builds with the Go version go.mod asks for, a static binary
// (no C library in a distroless image), and runs as a non-root user; the
// compose file's two processes share one database and one key. Where a
// container engine runs, .ci/run also builds the image and starts it.
func TestContainerFilesAgreeWithTheModule(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gomod, dockerfile, compose := read("go.mod"), read("Dockerfile"), read("compose.yaml")
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(gomod)
	from := regexp.MustCompile(`(?m)^FROM golang:(\S+?)-\S+ AS build$`).FindStringSubmatch(dockerfile)
	if goLine == nil || from == nil || goLine[1] != from[1] {
		t.Errorf("go.mod says go %v, the Dockerfile builds with golang:%v", goLine, from)
	}
	for _, want := range []string{"CGO_ENABLED=0", "USER nonroot:nonroot", "HERALD_DATABASE_URL=sqlite:/data/herald.db", "./cmd/herald"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if n := strings.Count(compose, "HERALD_SECRET_KEY: ${HERALD_SECRET_KEY"); n != 1 || !strings.Contains(compose, "herald-2:\n    <<: *herald") {
		t.Errorf("compose.yaml: want herald-2 to share herald-1's settings (one database, one key)")
	}
}
