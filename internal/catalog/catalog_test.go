package catalog_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/openapi"
)

const eventsDoc = "../../docs/events.md"

// TestEventsDocIsGenerated: docs/events.md's generated regions are what
// the catalog writes, so the page and the portal's catalog cannot drift.
func TestEventsDocIsGenerated(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(eventsDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalog.UpdateDoc(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Errorf("%s is stale: run go generate ./internal/catalog", eventsDoc)
	}
}

func TestUpdateDocWantsEveryRegion(t *testing.T) {
	t.Parallel()
	for _, page := range []string{
		"no regions at all\n",
		"<!-- generated: kinds -->\n<!-- end generated: kinds -->\n<!-- generated: fields -->\n<!-- end generated: fields -->\n",
		"<!-- end generated: kinds --><!-- generated: kinds -->\n",
	} {
		if _, err := catalog.UpdateDoc([]byte(page)); err == nil {
			t.Errorf("UpdateDoc(%q) = nil error; want one naming the missing region", page)
		}
	}
}

// TestReachNamesEveryWebhookType: the catalog says every kind can go to
// every webhook type, naming each type herald has.
func TestReachNamesEveryWebhookType(t *testing.T) {
	t.Parallel()
	got := catalog.Reach()
	if !strings.HasPrefix(got, "Every kind can go to a webhook of every type") {
		t.Errorf("Reach() = %q; want it to say every kind can go to every type", got)
	}
	for _, name := range types.Names() {
		if !strings.Contains(got, "`"+name+"`") {
			t.Errorf("Reach() = %q; want it to name %s", got, name)
		}
	}
}

// TestEveryKindOnce: the catalog holds every kind a webhook may subscribe
// to, once, each with what fires it and an example of that kind.
func TestEveryKindOnce(t *testing.T) {
	t.Parallel()
	var got []string
	for _, k := range catalog.Kinds() {
		got = append(got, string(k.Kind))
		if k.Fires == "" || k.Data == "" || !strings.HasPrefix(k.Data, k.Resource) {
			t.Errorf("%s: fires %q, data %q, resource %q", k.Kind, k.Fires, k.Data, k.Resource)
		}
		var p struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(k.Example), &p); err != nil || p.Event != string(k.Kind) {
			t.Errorf("%s example: event %q, %v", k.Kind, p.Event, err)
		}
		if strings.Contains(k.Example, `\u`) {
			t.Errorf("%s example escapes characters herald sends as raw UTF-8", k.Kind)
		}
	}
	var want []string
	for _, k := range event.Kinds {
		want = append(want, string(k))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("catalog kinds %v; want every kind once: %v", got, want)
	}
}

// TestFieldsAreTheReferences: each resource lists every property of its
// schema in the API reference, and no other, with its type.
func TestFieldsAreTheReferences(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	resources := catalog.Resources()
	named := map[string]bool{}
	for _, k := range catalog.Kinds() {
		named[k.Resource] = true
	}
	if len(resources) != len(named) || len(resources) == 0 {
		t.Errorf("%d resources; the kinds name %d", len(resources), len(named))
	}
	for _, r := range resources {
		var top []string
		for _, f := range r.Fields {
			if f.Type == "" {
				t.Errorf("%s.%s has no type", r.Name, f.Name)
			}
			if !strings.ContainsAny(f.Name, "[.") {
				top = append(top, f.Name)
			}
		}
		var want []string
		for k := range doc.Components.Schemas[r.Name].Properties {
			want = append(want, k)
		}
		slices.Sort(top)
		slices.Sort(want)
		if !slices.Equal(top, want) {
			t.Errorf("%s fields %v; the reference has %v", r.Name, top, want)
		}
		if r.Name == "Release" && !slices.ContainsFunc(r.Fields, func(f catalog.Field) bool { return f.Name == "files[].sha256" }) {
			t.Errorf("Release lists no fields of its files")
		}
	}
}
