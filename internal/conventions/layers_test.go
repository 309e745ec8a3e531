package conventions_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers is the order of herald's packages, written once, lowest first. A
// package may import packages of its own layer or below, never above:
// test files included, since a test that imports a package above its own
// makes the lower package's tests depend on everything above (a change to
// the server reruns the store's suite, and a server that does not build
// fails it). A package not listed fails the test until it is placed.
var layers = [][]string{
	// Leaves: nothing of herald's.
	{"client", "examples/receivers/go", "internal/accesslog", "internal/admission", "internal/attempt", "internal/auth",
		"internal/conventions", "internal/destination", "internal/event/kindgen", "internal/expiry", "internal/filter",
		"internal/health", "internal/jsonlimit", "internal/netguard", "internal/notify/smtptest",
		"internal/openapi", "internal/proxytest", "internal/ratelimit", "internal/receivertest", "internal/secret", "internal/startstop", "internal/testdb"},
	// What the store and the edges build on: events, their catalogue and
	// reference, tracing, the signature checker, the local listener,
	// and the destination types, each a package over internal/destination.
	{"internal/catalog", "internal/catalog/docgen", "internal/destination/eventbridge", "internal/destination/kafka",
		"internal/destination/nats", "internal/destination/pubsub", "internal/destination/rabbitmq", "internal/destination/sqs", "internal/destination/sqs/sqstest", "internal/destination/awsapi",
		"internal/destination/destinationtest", "internal/destination/types", "internal/event", "internal/jsonlimit/jsonlimittest",
		"internal/listen", "internal/openapi/jsongen", "internal/openapitest", "internal/sigcheck", "internal/tracing"},
	{"internal/store"},
	{"internal/queue"},
	// The store's suite, and what runs on the store.
	{"internal/accounts", "internal/backup", "internal/delivery", "internal/licensing", "internal/metrics",
		"internal/notify", "internal/retention", "internal/store/storetest", "internal/validator"},
	// The edges.
	{"internal/api", "internal/portal"},
	{"internal/server"},
	// A started server, for the tests above it.
	{"internal/heraldtest"},
	// What tests a whole herald: the end-to-end suites, the benchmark,
	// the example receivers.
	{"client/e2e", "examples/receivers", "internal/api/e2e", "internal/bench", "internal/portal/e2e", "internal/server/e2e"},
	{"cmd/herald"},
}

// supports names each package that exists to test the ones it maps to:
// the tested packages' own tests may import it though it sits above them,
// as a package's _test files sit above the package. The store's suite
// runs the queue's behaviours beside the store's, over one database.
var supports = map[string][]string{
	"internal/jsonlimit/jsonlimittest": {"internal/jsonlimit"},
	"internal/openapitest":             {"internal/openapi"},
	"internal/store/storetest":         {"internal/store", "internal/queue"},
}

// apart names, for a package, packages below it that its code (its tests
// aside) must not import all the same: the dispatcher speaks to the event
// pipeline only through attempt's types and its own interfaces, so that
// what holds the queue can change with nothing in delivery changing
// (decision 0130); its tests run it over the real store.
var apart = map[string][]string{
	"internal/delivery": {"internal/store", "internal/queue"},
}

const module = "github.com/heraldhq/herald/"

// TestNoPackageImportsOneAboveIt fails for an import, in code or in a
// test, of a package on a higher layer than the importer's.
func TestNoPackageImportsOneAboveIt(t *testing.T) {
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			if _, dup := layerOf[p]; dup {
				t.Errorf("%s is listed twice", p)
			}
			layerOf[p] = i
		}
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		seen[name] = true
		at, ok := layerOf[name]
		if !ok {
			t.Errorf("%s is in no layer: place it in layers", name)
			continue
		}
		for kind, imports := range map[string][]string{"imports": p.Imports, "tests import": append(p.TestImports, p.XTestImports...)} {
			for _, imp := range imports {
				dep, ours := strings.CutPrefix(imp, module)
				if !ours || dep == name {
					continue
				}
				if kind == "tests import" && slices.Contains(supports[dep], name) {
					continue
				}
				if l, ok := layerOf[dep]; ok && l > at {
					t.Errorf("%s %s %s, a layer above it", name, kind, dep)
				}
				if kind == "imports" && slices.Contains(apart[name], dep) {
					t.Errorf("%s imports %s, which it must speak to only through its own interfaces", name, dep)
				}
			}
		}
	}
	for p := range layerOf {
		if !seen[p] {
			t.Errorf("layers lists %s, which is no package", p)
		}
	}
}
