// Command kindgen writes everything that lists herald's event kinds from
// their one declaration, internal/event/kinds.yaml: the Kind constants, the
// list and the declarations as Go (internal/event/kinds_gen.go), the
// client's lists (client/kinds_gen.go), and the generated parts of the
// API reference (the introduction's kinds table, the kinds' enumeration, a
// payload schema per kind and the webhooks). It runs through go generate in package event; a test fails
// while any file it writes is stale.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Paths, from package event's directory, where go generate runs.
const (
	declPath      = "kinds.yaml"
	eventPath     = "kinds_gen.go"
	clientPath    = "../../client/kinds_gen.go"
	referencePath = "../openapi/openapi.yaml"
)

func main() {
	dir := flag.String("dir", ".", "package event's directory")
	flag.Parse()
	files, err := generate(*dir)
	if err != nil {
		log.Fatalf("kindgen: %v", err)
	}
	for path, b := range files {
		if err := os.WriteFile(*dir+"/"+path, b, 0o644); err != nil {
			log.Fatalf("kindgen: %v", err)
		}
	}
}

// decl is one entry of kinds.yaml.
type decl struct {
	Kind     string   `yaml:"kind"`
	Const    string   `yaml:"const"`
	Group    string   `yaml:"group"`
	Resource string   `yaml:"resource"`
	Data     string   `yaml:"data"`
	Fires    string   `yaml:"fires"`
	Notes    []string `yaml:"notes"`
	Example  string   `yaml:"example"`
}

// sequenced reports whether the kind's events concern a license, so that
// each carries its number among the license's events (decision 0122).
func (k decl) sequenced() bool { return k.Resource == "License" || k.Resource == "Activation" }

// groups, in the order their constants are written, with their comments.
var groups = []struct{ name, field, comment string }{
	{"specification", "GroupSpecification", "The kinds the specification names. Their meaning never changes."},
	{"licensing", "GroupLicensing", "Further kinds that users of licensing platforms expect."},
	{"operational", "GroupOperational", "Operational kinds: a webhook's health changed. They go to the account's\n// other webhooks that subscribe to them, never to the webhook they are about."},
}

// generate returns each file kindgen writes, by its path from dir, as it
// should be now.
func generate(dir string) (map[string][]byte, error) {
	src, err := os.ReadFile(dir + "/" + declPath)
	if err != nil {
		return nil, err
	}
	kinds, err := parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", declPath, err)
	}
	ref, err := os.ReadFile(dir + "/" + referencePath)
	if err != nil {
		return nil, err
	}
	ref, err = reference(ref, kinds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", referencePath, err)
	}
	ev, err := eventGo(kinds)
	if err != nil {
		return nil, err
	}
	cl, err := clientGo(kinds)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{eventPath: ev, clientPath: cl, referencePath: ref}, nil
}

var (
	kindName  = regexp.MustCompile(`^[a-z][a-z-]*(\.[a-zA-Z][a-zA-Z-]*)+$`)
	constName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// parse reads and checks the declarations: every field there, names unique,
// and each example a payload of its own kind.
func parse(src []byte) ([]decl, error) {
	var kinds []decl
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&kinds); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, k := range kinds {
		switch {
		case !kindName.MatchString(k.Kind):
			return nil, fmt.Errorf("entry %d: kind %q is not a kind's name (resource.change)", i+1, k.Kind)
		case !constName.MatchString(k.Const):
			return nil, fmt.Errorf("%s: const %q is not an exported Go name", k.Kind, k.Const)
		case !slices.ContainsFunc(groups, func(g struct{ name, field, comment string }) bool { return g.name == k.Group }):
			return nil, fmt.Errorf("%s: group %q is not specification, licensing or operational", k.Kind, k.Group)
		case !constName.MatchString(k.Resource):
			return nil, fmt.Errorf("%s: resource %q is not a schema's name", k.Kind, k.Resource)
		case k.Data == "" || k.Fires == "":
			return nil, fmt.Errorf("%s: data and fires are needed", k.Kind)
		case seen[k.Kind] || seen[k.Const]:
			return nil, fmt.Errorf("%s: declared twice (kind or const %s)", k.Kind, k.Const)
		}
		seen[k.Kind], seen[k.Const] = true, true
		var p struct {
			Event    string          `json:"event"`
			Data     json.RawMessage `json:"data"`
			Sequence *int64          `json:"sequence"`
		}
		if err := json.Unmarshal([]byte(k.Example), &p); err != nil {
			return nil, fmt.Errorf("%s: example: %w", k.Kind, err)
		}
		if p.Event != k.Kind {
			return nil, fmt.Errorf("%s: example's event is %q", k.Kind, p.Event)
		}
		if (p.Sequence != nil) != k.sequenced() {
			return nil, fmt.Errorf("%s: example has a sequence %v; an event has one exactly when it concerns a license (its resource is License or Activation)", k.Kind, p.Sequence != nil)
		}
	}
	return kinds, nil
}

func eventGo(kinds []decl) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by kindgen from kinds.yaml; DO NOT EDIT.\n\npackage event\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n// %s\nconst (\n", g.comment)
		for _, k := range kinds {
			if k.Group == g.name {
				fmt.Fprintf(&b, "\t%s Kind = %q\n", k.Const, k.Kind)
			}
		}
		b.WriteString(")\n")
	}
	b.WriteString("\n// Kinds lists every kind a webhook may subscribe to, in documentation order.\nvar Kinds = []Kind{\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "\t%s,\n", k.Const)
	}
	b.WriteString("}\n\nvar declarations = []Declaration{\n")
	for _, k := range kinds {
		group := ""
		for _, g := range groups {
			if g.name == k.Group {
				group = g.field
			}
		}
		notes := "nil"
		if len(k.Notes) > 0 {
			var q []string
			for _, n := range k.Notes {
				q = append(q, fmt.Sprintf("%q", n))
			}
			notes = "[]string{\n" + strings.Join(q, ",\n") + ",\n}"
		}
		fmt.Fprintf(&b, "\t{\n\t\tKind: %s, Group: %s, Resource: %q, constName: %q,\n\t\tData: %q,\n\t\tFires: %q,\n\t\tNotes: %s,\n\t\tExample: %s,\n\t},\n",
			k.Const, group, k.Resource, k.Const, k.Data, k.Fires, notes, goString(strings.TrimRight(k.Example, "\n")))
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format kinds_gen.go: %w", err)
	}
	return out, nil
}

// goString writes s as a raw string when it can, so an example reads as
// it is.
func goString(s string) string {
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return fmt.Sprintf("%q", s)
}

func clientGo(kinds []decl) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by kindgen from internal/event/kinds.yaml; DO NOT EDIT.\n\npackage client\n\n")
	b.WriteString("// TriggerKinds are the event kinds Trigger can fire: every kind about a\n// licensing resource.\nvar TriggerKinds = []string{\n")
	for _, k := range kinds {
		if k.Group != "operational" {
			fmt.Fprintf(&b, "\t%q,\n", k.Kind)
		}
	}
	b.WriteString("}\n\n// OperationalKinds are the event kinds about webhooks themselves. No API\n// call fires them: a change of a webhook's health does, and Trigger refuses\n// them with how to see one (a Test of the kind sends a sample).\nvar OperationalKinds = []string{\n")
	for _, k := range kinds {
		if k.Group == "operational" {
			fmt.Fprintf(&b, "\t%q,\n", k.Kind)
		}
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format client/kinds_gen.go: %w", err)
	}
	return out, nil
}
