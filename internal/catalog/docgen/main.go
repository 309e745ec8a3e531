// Command docgen rewrites the generated regions of docs/events.md from the
// event catalog: go generate ./internal/catalog.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/heraldhq/herald/internal/catalog"
)

func main() {
	path := flag.String("doc", "../../docs/events.md", "the page to update")
	flag.Parse()
	if err := run(*path); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := catalog.UpdateDoc(page)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}
