package portal

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// The webhook form's type picker: http's URL, or one fieldset of config
// fields per destination type, drawn from the type's own Fields, so a new
// type needs nothing here. Each field is posted as "<type>.<path>"
// (rabbitmq.url, kafka.sasl.password): without scripts every fieldset is
// shown and only the chosen type's are read; app.js shows only that one.

// typeOption is one type the picker offers, with its fields as shown.
type typeOption struct {
	Name     string
	Selected bool
	Fields   []configField
}

// configField is one config field in the form.
type configField struct {
	ID, Name, Label, Hint, Value string
	Kind                         string // text, secret, list, bool, choice, multiline
	Required, Checked            bool
	Choices                      []string
}

// kindNames says how the template draws each kind of field.
var kindNames = map[destination.Kind]string{destination.Text: "text", destination.Secret: "secret", destination.URL: "text",
	destination.List: "list", destination.Bool: "bool", destination.Choice: "choice"}

// fieldID is a config field's id on the page, and its error's key.
func fieldID(typ, path string) string { return typ + "-" + strings.ReplaceAll(path, ".", "-") }

// typeOptions draws the picker for a form: the chosen type's fields hold
// the form's values, the others are empty.
func typeOptions(f webhookForm, errs fieldErrors) []typeOption {
	var out []typeOption
	for _, t := range types.All() {
		o := typeOption{Name: t.Name(), Selected: f.Type == t.Name()}
		for _, fd := range t.Fields() {
			c := configField{ID: fieldID(t.Name(), fd.Path), Name: t.Name() + "." + fd.Path, Label: fd.Label, Hint: fd.Hint,
				Kind: kindNames[fd.Kind], Required: fd.Required, Choices: fd.Choices}
			if fd.Multiline {
				c.Kind = "multiline"
			}
			if o.Selected {
				c.Value = f.Config[c.Name]
				c.Checked = c.Value == "on"
			}
			o.Fields = append(o.Fields, c)
		}
		out = append(out, o)
	}
	return out
}

// readConfigForm keeps the posted values of every config field.
func readConfigForm(v url.Values) map[string]string {
	out := map[string]string{}
	for _, t := range types.All() {
		for _, fd := range t.Fields() {
			name := t.Name() + "." + fd.Path
			if s := v.Get(name); s != "" {
				out[name] = s
			}
		}
	}
	return out
}

// configFormOf shows a stored config in the form, its secrets masked.
func configFormOf(typ string, stored json.RawMessage) map[string]string {
	out := map[string]string{}
	t, ok := types.Named(typ)
	if !ok {
		return out
	}
	c, err := destination.Parse(stored)
	if err != nil {
		return out
	}
	c = destination.Mask(t, c)
	for _, fd := range t.Fields() {
		name := typ + "." + fd.Path
		switch fd.Kind {
		case destination.List:
			out[name] = strings.Join(c.Strings(fd.Path), "\n")
		case destination.Bool:
			if c.Bool(fd.Path) {
				out[name] = "on"
			}
		default:
			out[name] = c.String(fd.Path)
		}
	}
	return out
}

// checkDestinationForm checks the type and, for a destination, its
// fields as the API does; it returns the config to store and its url.
// Errors are keyed by the fields' ids, in the words of the fields' labels.
func (h *handler) checkDestinationForm(f *webhookForm, old json.RawMessage, errs fieldErrors) (json.RawMessage, string, fieldErrors) {
	var v validator.Errors
	validator.CheckType(&v, "type", f.Type)
	t, ok := types.Named(f.Type)
	if len(v) > 0 || !ok {
		for _, e := range v {
			errs.add("type", "Type "+e.Detail+".")
		}
		return nil, "", errs
	}
	c := destination.Config{}
	for _, fd := range t.Fields() {
		s := f.Config[f.Type+"."+fd.Path]
		switch {
		case fd.Kind == destination.List:
			var list []any
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					list = append(list, line)
				}
			}
			if list != nil {
				setPath(c, fd.Path, list)
			}
		case fd.Kind == destination.Bool:
			if s == "on" {
				setPath(c, fd.Path, true)
			}
		case strings.TrimSpace(s) != "":
			setPath(c, fd.Path, s)
		}
	}
	raw, _ := json.Marshal(c)
	stored, where := validator.CheckConfig(&v, h.policy, f.Type, raw, old)
	labels := map[string]string{}
	for _, fd := range t.Fields() {
		labels[fd.Path] = fd.Label
	}
	for _, e := range v {
		path, _ := strings.CutPrefix(e.Field, "config.")
		path, _, _ = strings.Cut(path, "[")
		label := labels[path]
		if label == "" {
			label = "Config"
		}
		errs.add(fieldID(f.Type, path), label+" "+e.Detail+".")
	}
	return stored, where, errs
}

// setPath sets a dotted path of a config.
func setPath(c destination.Config, path string, v any) {
	m := map[string]any(c)
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// isDestination reports whether a form's type publishes to a broker.
func (f webhookForm) isDestination() bool { return f.Type != "" && f.Type != store.TypeHTTP }
