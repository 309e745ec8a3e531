package portal

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

//go:embed templates
var templateFS embed.FS

// pages holds every page's template, parsed once at start: each page file
// with the layout and the partials.
type pages struct {
	byName map[string]*template.Template
}

func mustParsePages(static *staticFiles) *pages {
	p, err := parsePages(static)
	if err != nil {
		panic(err)
	}
	return p
}

func parsePages(static *staticFiles) (*pages, error) {
	files, err := fs.Glob(templateFS, "templates/pages/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		t, err := template.New(name).Funcs(funcs(static)).ParseFS(templateFS, "templates/layout.html", "templates/partials/*.html", f)
		if err != nil {
			return nil, fmt.Errorf("parse page %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what the layout renders: the page's own data in Data.
type view struct {
	Email string // the signed-in owner; "" when nobody is
	CSRF  string // the session's CSRF token, for every form
	Nav   string // the current navigation entry
	Flash string // what the last action did
	Data  any
}

// flashes are the confirmations a redirect names with ?done=.
var flashes = map[string]string{
	"created":  "Webhook added.",
	"saved":    "Webhook saved.",
	"deleted":  "Webhook deleted.",
	"enabled":  "Webhook enabled.",
	"disabled": "Webhook disabled.",
	"account":  "Settings saved.",

	"recovery":       "Resending the missed events, each once; the progress shows below.",
	"nothing-missed": "The webhook is Healthy: it has no missed events to resend.",

	"token-revoked": "API token revoked. Requests that carry it now answer 401.",
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 rather than half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) error {
	t := h.pages.byName[name]
	if t == nil {
		return fmt.Errorf("no page %q", name)
	}
	v := view{Data: data, Flash: flashes[r.URL.Query().Get("done")], Nav: navFor(r.URL.Path)}
	if s, ok := sessionFrom(r.Context()); ok {
		v.Email, v.CSRF = s.OwnerEmail, s.CSRFToken
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return nil
}

func navFor(p string) string {
	switch {
	case strings.HasPrefix(p, "/webhook-event-logs"):
		return "logs"
	case strings.HasPrefix(p, "/webhooks"):
		return "webhooks"
	case strings.HasPrefix(p, "/account/api-tokens"):
		return "api-tokens"
	case strings.HasPrefix(p, "/account"):
		return "account"
	}
	return ""
}

// funcs are the templates' helpers.
func funcs(static *staticFiles) template.FuncMap {
	return template.FuncMap{
		"static": static.url,
		"when":   when,
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"ms":     duration,
		"statusText": func(code int) string {
			return http.StatusText(code)
		},
		"lower": func(s any) string { return strings.ToLower(fmt.Sprint(s)) },
		"kinds": func() []event.Kind { return event.Kinds },
		"sub":   func(a, b int) int { return a - b },
		"count": thousands,
		// took is how long the latest attempt of a log took.
		"took": func(d *time.Duration) string { return duration(d.Milliseconds()) },
		// plural picks the word for n: one for 1, many otherwise.
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return one
			}
			return many
		},
		"str": func(b []byte) string { return string(b) },
		// num reads a status code that may be absent (*int).
		"num": func(v any) int {
			if p, ok := v.(*int); ok && p != nil {
				return *p
			}
			n, _ := v.(int)
			return n
		},
		"fieldError": func(id string, errs fieldErrors) fieldErrorArgs { return fieldErrorArgs{ID: id, Msg: errs[id]} },
		// item passes a row and the page's root to a partial, and where an
		// action on the row comes back to.
		"item": func(root view, it any, back ...string) rowArgs {
			a := rowArgs{Root: root, Item: it}
			if len(back) > 0 {
				a.Back = back[0]
			}
			return a
		},
		"resendOutcome": func(a *store.Attempt) string {
			if a.Error == nil {
				return fmt.Sprintf("the receiver answered %d %s in %s", *a.StatusCode, http.StatusText(*a.StatusCode), duration(a.DurationMS))
			}
			return *a.Error
		},
	}
}

type fieldErrorArgs struct{ ID, Msg string }

type rowArgs struct {
	Root view
	Item any
	Back string
}

// when shows a time in UTC to the second; a nil time shows as a dash.
func when(t any) string {
	switch v := t.(type) {
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04:05 UTC")
	case *time.Time:
		if v != nil {
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		}
	}
	return "—"
}

// thousands writes n with a comma between groups of three digits, as the
// portal's English does: 50,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
