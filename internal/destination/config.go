package destination

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Config is a destination's config as the API reads and writes it: a JSON
// object, its nested objects (Kafka's sasl and tls) as maps, its lists as
// []any. It is kept sealed whole, like a webhook's token.
type Config map[string]any

// String returns the text at path ("" when absent).
func (c Config) String(path string) string {
	s, _ := c.get(path).(string)
	return s
}

// Strings returns the list of texts at path.
func (c Config) Strings(path string) []string {
	list, _ := c.get(path).([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Bool returns the truth value at path (false when absent).
func (c Config) Bool(path string) bool {
	b, _ := c.get(path).(bool)
	return b
}

func (c Config) get(path string) any {
	var cur any = map[string]any(c)
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func (c Config) set(path string, v any) {
	m := map[string]any(c)
	parts := strings.Split(path, ".")
	for _, part := range parts[:len(parts)-1] {
		next, ok := m[part].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[part] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// Parse reads a stored or sent config; nil or null is an empty one.
func Parse(raw []byte) (Config, error) {
	c := Config{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("read destination config: %w", err)
	}
	return c, nil
}

// Kind is what a config field holds.
type Kind int

// The kinds of config fields.
const (
	Text   Kind = iota // one line of text
	Secret             // text never shown again: masked in every answer
	URL                // a URL whose password, if any, is masked
	List               // a list of texts (the API's array; one per line in the portal)
	Bool               // true or false
	Choice             // one of Choices
)

// Address says which fields name a broker to be reached, checked against
// herald's outbound policy when saved, as a webhook URL is.
type Address int

// How a field names a broker.
const (
	NoAddress Address = iota
	URLHost           // a URL, whose host is checked
	HostPort          // host:port, or a list of them
)

// Field is one field of a type's config.
type Field struct {
	Path     string // its name in the config, dotted inside an object: "sasl.password"
	Label    string // what a form calls it
	Kind     Kind
	Required bool
	// Multiline lets a Secret hold line breaks (a credentials file).
	Multiline bool
	Hint      string   // one sentence for a form
	Choices   []string // for Choice
	Address   Address
	// Schemes are the URL schemes a URL field accepts.
	Schemes []string
}

// Masked stands for a secret in every answer; sent back unchanged, it keeps
// the stored value (as a custom header's does).
const Masked = "********"

// MaxFieldLength bounds a config's text; a Multiline secret (a service
// account's JSON, a NATS credentials file) may hold MaxSecretLength.
const (
	MaxFieldLength  = 2048
	MaxSecretLength = 16 << 10
	MaxListLength   = 32
)

// FieldError names a config field by its path in the API ("config.exchange")
// and what is wrong with it.
type FieldError struct{ Field, Detail string }

// Policy checks a broker's host against herald's outbound policy;
// netguard.Policy is one.
type Policy interface {
	ValidateHost(host string) error
}

// Read checks a config sent for type t: an object of t's fields only, each
// of its kind, the required ones present, each address allowed by policy,
// then t's own rules. A secret sent as Masked keeps old's value (old is
// the stored config, nil for a new webhook). It returns the config to
// store, and the errors, each naming its field under "config.".
func Read(t Type, raw json.RawMessage, old Config, policy Policy) (Config, []FieldError) {
	var errs []FieldError
	add := func(path, detail string) { errs = append(errs, FieldError{"config." + path, detail}) }
	var in map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&in); err != nil || in == nil {
		return nil, []FieldError{{"config", "must be an object of the " + t.Name() + " destination's fields"}}
	}
	known := map[string]bool{}
	for _, f := range t.Fields() {
		known[f.Path] = true
		if i := strings.IndexByte(f.Path, '.'); i > 0 {
			known[f.Path[:i]] = true
		}
	}
	unknown(in, "", known, t, add)
	out := Config{}
	for _, f := range t.Fields() {
		v := Config(in).get(f.Path)
		if v == nil {
			if f.Required {
				add(f.Path, "is required")
			}
			continue
		}
		if val, ok := readField(f, v, old, policy, add); ok {
			out.set(f.Path, val)
		}
	}
	if len(errs) == 0 {
		t.Check(out, add)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return out, errs
}

// unknown names every key of in that is no field of t.
func unknown(in map[string]any, prefix string, known map[string]bool, t Type, add func(path, detail string)) {
	for k, v := range in {
		path := prefix + k
		if !known[path] {
			add(path, "is not a field of a "+t.Name()+" destination")
			continue
		}
		if m, ok := v.(map[string]any); ok {
			unknown(m, path+".", known, t, add)
		}
	}
}

// readField checks one field's value and returns what to store.
func readField(f Field, v any, old Config, policy Policy, add func(path, detail string)) (any, bool) {
	switch f.Kind {
	case Bool:
		b, ok := v.(bool)
		if !ok {
			add(f.Path, "must be true or false")
		}
		return b, ok
	case List:
		list, ok := v.([]any)
		if !ok {
			add(f.Path, "must be an array of strings")
			return nil, false
		}
		if len(list) == 0 && f.Required {
			add(f.Path, "must hold at least one value")
			return nil, false
		}
		if len(list) > MaxListLength {
			add(f.Path, fmt.Sprintf("must hold at most %d values", MaxListLength))
			return nil, false
		}
		out := make([]any, len(list))
		good := true
		for i, e := range list {
			s, ok := e.(string)
			p := fmt.Sprintf("%s[%d]", f.Path, i)
			if !ok {
				add(p, "must be a string")
				good = false
				continue
			}
			s = strings.TrimSpace(s)
			if !checkText(s, false, MaxFieldLength, p, add) || !checkAddress(f, s, policy, p, add) {
				good = false
			}
			out[i] = s
		}
		return out, good
	}
	s, ok := v.(string)
	if !ok {
		add(f.Path, "must be a string")
		return nil, false
	}
	if f.Kind != Secret || !f.Multiline {
		s = strings.TrimSpace(s)
	}
	switch {
	case f.Kind == Secret && s == Masked:
		kept := old.String(f.Path)
		if kept == "" {
			add(f.Path, "is the masked value "+Masked+", which keeps a stored value, but none is stored; send the value itself")
			return nil, false
		}
		return kept, true
	case f.Kind == URL:
		s = keepPassword(s, old.String(f.Path))
	}
	if s == "" {
		if f.Required {
			add(f.Path, "must not be empty")
			return nil, false
		}
		return nil, false
	}
	limit := MaxFieldLength
	if f.Multiline {
		limit = MaxSecretLength
	}
	if !checkText(s, f.Multiline, limit, f.Path, add) {
		return nil, false
	}
	if f.Kind == Choice && !slices.Contains(f.Choices, s) {
		add(f.Path, fmt.Sprintf("%q: must be one of %s", s, strings.Join(f.Choices, ", ")))
		return nil, false
	}
	if !checkAddress(f, s, policy, f.Path, add) {
		return nil, false
	}
	return s, true
}

// checkText refuses what is not text of a line (or of lines, when
// multiline), or longer than limit bytes.
func checkText(s string, multiline bool, limit int, path string, add func(path, detail string)) bool {
	if !utf8.ValidString(s) {
		add(path, "must be UTF-8 text")
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			add(path, fmt.Sprintf("must not hold control characters such as %U", r))
			return false
		}
	}
	if len(s) > limit {
		add(path, fmt.Sprintf("must be at most %d bytes", limit))
		return false
	}
	return true
}

// checkAddress checks a broker's address: its form, then its host against
// the policy.
func checkAddress(f Field, s string, policy Policy, path string, add func(path, detail string)) bool {
	var host string
	switch f.Address {
	case NoAddress:
		return true
	case URLHost:
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || u.Opaque != "" {
			add(path, "must be an absolute URL with a host, such as "+f.Schemes[0]+"://broker.example.com")
			return false
		}
		if len(f.Schemes) > 0 && !slices.Contains(f.Schemes, u.Scheme) {
			add(path, "must use "+strings.Join(f.Schemes, " or "))
			return false
		}
		if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				add(path, "must have a port between 1 and 65535")
				return false
			}
		}
		host = u.Hostname()
	case HostPort:
		h, port, err := net.SplitHostPort(s)
		n, perr := strconv.Atoi(port)
		if err != nil || h == "" || perr != nil || n < 1 || n > 65535 {
			add(path, "must be host:port, such as broker.example.com:9092")
			return false
		}
		host = h
	}
	if policy == nil {
		return true
	}
	if err := policy.ValidateHost(host); err != nil {
		add(path, err.Error())
		return false
	}
	return true
}

// keepPassword puts old's password back in a URL sent with the masked one.
func keepPassword(s, old string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if p, ok := u.User.Password(); !ok || p != Masked {
		return s
	}
	o, err := url.Parse(old)
	if err != nil || o.User == nil {
		return s // left masked: no broker takes it, and the attempt says so
	}
	if p, ok := o.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), p)
	}
	return u.String()
}

// Mask returns c as every answer shows it: each secret, and each URL's
// password, as Masked.
func Mask(t Type, c Config) Config {
	out := clone(c)
	for _, f := range t.Fields() {
		s, ok := out.get(f.Path).(string)
		if !ok || s == "" {
			continue
		}
		switch f.Kind {
		case Secret:
			out.set(f.Path, Masked)
		case URL:
			if u, err := url.Parse(s); err == nil && u.User != nil {
				if _, has := u.User.Password(); has {
					u.User = url.UserPassword(u.User.Username(), Masked)
					out.set(f.Path, strings.Replace(u.String(), url.QueryEscape(Masked), Masked, 1))
				}
			}
		}
	}
	return out
}

// clone copies a config deeply enough to set its fields.
func clone(c Config) Config {
	out := Config{}
	for k, v := range c {
		if m, ok := v.(map[string]any); ok {
			v = map[string]any(clone(m))
		}
		out[k] = v
	}
	return out
}
