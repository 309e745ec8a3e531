package portal

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
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
	Email   string // the signed-in owner; "" when nobody is
	Account string // the signed-in owner's account, by name
	CSRF    string // the session's CSRF token, for every form
	Page    string // the page's own address, sent with every form: an ended session comes back here
	Nav     string // the current navigation entry
	Flash   string // what the last action did, shown once
	Data    any
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 rather than half a page. A page showing a refused form's
// flash answers the refusal's status.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) error {
	t := h.pages.byName[name]
	if t == nil {
		return fmt.Errorf("no page %q", name)
	}
	f := flashFrom(r.Context())
	v := view{Data: data, Flash: f.Notice, Nav: navFor(r.URL.Path), Page: r.URL.RequestURI()}
	if r.Method != http.MethodGet {
		v.Page = localPath(r.PostForm.Get("page"), "/webhooks")
	}
	if status == http.StatusOK && f.Status != 0 {
		status = f.Status
	}
	if s, ok := sessionFrom(r.Context()); ok {
		v.Email, v.CSRF, v.Account = s.OwnerEmail, s.CSRFToken, s.AccountName
	} else if held, ok := r.Context().Value(sessionHeld{}).(*store.Session); ok && held.CSRFToken != "" {
		// An error page of a signed-in request keeps the sidebar and
		// Sign out: serve renders it with the request it started with.
		v.Email, v.CSRF, v.Account = held.OwnerEmail, held.CSRFToken, held.AccountName
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
	case p == "/events":
		return "events"
	case strings.HasPrefix(p, "/account/api-tokens"):
		return "api-tokens"
	case strings.HasPrefix(p, "/account/members"), strings.HasPrefix(p, "/account/invitations"):
		return "members"
	case strings.HasPrefix(p, "/account"):
		return "account"
	}
	return ""
}

// funcs are the templates' helpers.
func funcs(static *staticFiles) template.FuncMap {
	return template.FuncMap{
		"static": static.url,
		// formToken is a form's one-time token, new at each rendering.
		"formToken": randomToken,
		"when":      when,
		"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"ms":        duration,
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
		// waitFor is how long n deliveries take at rate a second, roughly.
		"waitFor": func(n, rate int) string {
			d := time.Duration(n) * time.Second / time.Duration(max(1, rate))
			if d < time.Second {
				return "under a second"
			}
			return "about " + d.Round(time.Second).String()
		},
		// inline renders `code` spans of catalog text; anchor is a kind's id
		// on the catalog page, the same as in docs/events.md.
		"inline": inlineCode,
		"anchor": func(k any) string { return catalog.Anchor(fmt.Sprint(k)) },
		// num reads a status code that may be absent (*int).
		"num": func(v any) int {
			if p, ok := v.(*int); ok && p != nil {
				return *p
			}
			n, _ := v.(int)
			return n
		},
		"fieldError": func(id string, errs fieldErrors) fieldErrorArgs { return fieldErrorArgs{ID: id, Msg: errs[id]} },
		// A webhook token's rules, in the words of the API's 422 and the CLI's help.
		"tokenRule":         func() string { return validator.TokenRule },
		"standardTokenRule": func() string { return validator.StandardTokenRule },
		// logTable passes logs to the log-table partial; oneWebhook leaves
		// out the webhook column on a page that is about one webhook.
		"logTable": func(rows []logRow, oneWebhook bool) logTableArgs {
			return logTableArgs{Rows: rows, OneWebhook: oneWebhook}
		},
		"summary": func(msg string, errs fieldErrors) summaryArgs {
			return summaryArgs{Msg: msg, Errors: errs, Items: inFieldOrder(errs)}
		},
		// item passes a row and the page's root to a partial, and where an
		// action on the row comes back to.
		"item": func(root view, it any, back ...string) rowArgs {
			a := rowArgs{Root: root, Item: it}
			if len(back) > 0 {
				a.Back = back[0]
			}
			return a
		},
		"stamp":        stamp,
		"short":        short,
		"maxHeaders":   func() int { return store.MaxAttemptHeaders },
		"maxHeaderKiB": func() int { return store.MaxAttemptHeaderBytes >> 10 },
		"resendOutcome": func(a *store.Attempt) string {
			reason := ""
			if a.Error != nil {
				reason = *a.Error
			}
			return failure(reason, a.StatusCode, a.DurationMS)
		},
		"testOutcome": func(r *delivery.TestResult) string {
			reason := ""
			if r.Error != nil {
				reason = *r.Error
			}
			if r.Response == nil {
				return failure(reason, nil, 0)
			}
			return failure(reason, &r.Response.StatusCode, r.Response.DurationMS)
		},
	}
}

type fieldErrorArgs struct{ ID, Msg string }

type summaryArgs struct {
	Msg    string
	Errors fieldErrors
	Items  []summaryItem // Errors in the order the forms show their fields
}

type summaryItem struct{ ID, Msg string }

type logTableArgs struct {
	Rows       []logRow
	OneWebhook bool
}

// fieldOrder is the order in which the portal's forms show their fields,
// one list for all: no two forms show two of them the other way round.
// A summary lists its errors in it, as a reader meets the fields.
var fieldOrder = []string{"name", "url", "token", "signatureScheme", "events", "filter", "headers", "scope", "expires", "current", "password", "confirm",
	"email", "role", "notificationEmail", "q", "status", "event", "from", "to"}

func inFieldOrder(errs fieldErrors) []summaryItem {
	var out []summaryItem
	for _, id := range fieldOrder {
		if msg, ok := errs[id]; ok {
			out = append(out, summaryItem{id, msg})
		}
	}
	var rest []string // any other, after them, by name
	for id := range errs {
		if id != "" && !slices.Contains(fieldOrder, id) {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	for _, id := range rest {
		out = append(out, summaryItem{id, errs[id]})
	}
	return out
}

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

// stampArgs is a time as the "time" partial writes it: the machine-readable
// instant, and the UTC text that pages show without JavaScript (app.js
// rewrites it into the viewer's local time, keeping UTC in the title).
type stampArgs struct{ ISO, UTC string }

// stamp reads a time.Time or *time.Time; nil for none.
func stamp(t any) *stampArgs {
	var v time.Time
	switch x := t.(type) {
	case time.Time:
		v = x
	case *time.Time:
		if x == nil {
			return nil
		}
		v = *x
	default:
		return nil
	}
	return &stampArgs{ISO: v.UTC().Format(time.RFC3339Nano), UTC: when(v)}
}

// short keeps the first n characters of s, and an ellipsis when it cut:
// lists show long names and URLs so, with the whole value in a title and
// on the webhook's own page.
func short(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// failure says what an attempt saw as a sentence: the receiver's answer
// with its meaning and how long it took when one came (and the reason when
// the answer itself was not the failure: a redirect, a body cut short), else
// the reason, capitalised.
func failure(reason string, code *int, ms int64) string {
	if code == nil {
		if reason == "" {
			return "No answer."
		}
		return strings.ToUpper(reason[:1]) + reason[1:] + "."
	}
	s := fmt.Sprintf("The receiver answered %d %s in %s", *code, http.StatusText(*code), duration(ms))
	switch {
	case *code >= 300 && *code < 400:
		s += "; redirects are not followed"
	case reason != "" && !strings.HasPrefix(reason, "receiver answered"):
		s += ", but " + reason
	}
	return s + "."
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
