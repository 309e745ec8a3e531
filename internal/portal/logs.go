package portal

import (
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

const logsPerPage = 25

// logCountLimit is where counting event logs stops: with 50,000 logs an
// exact count took 7 to 70 ms on SQLite and PostgreSQL (the most when a
// status filter made it read every row); stopping at 10,000 keeps that cost
// bounded however long the history grows, and "more than 10,000" tells the
// reader as much as the exact number would.
const logCountLimit = 10000

// logRow is an event log with its webhook's name.
type logRow struct {
	store.EventLog
	WebhookName string
}

// logFilter holds the filters as given, so that every link keeps them.
type logFilter struct {
	Webhook     string // one webhook's id, as its page links to its logs
	WebhookName string // part of webhooks' names
	Status      store.LogStatus
	Event       event.Kind
	EventID     string
	From, To    string // dates (UTC) as typed: YYYY-MM-DD, or with a time
}

type logsData struct {
	Filter      logFilter
	Filtered    bool
	WebhookName string // the name of Filter.Webhook; "" when it is gone
	Statuses    []store.LogStatus
	Kinds       []event.Kind
	Logs        []logRow
	Count       int
	More        bool // more than Count match
	Pages       pager
	Errors      fieldErrors
}

var logStatuses = []store.LogStatus{store.Queued, store.Pending, store.Retrying, store.Succeeded, store.Failed, store.Cancelled}

// logs lists event logs newest first, filtered by webhook, status, event
// kind, event id and creation date, a page at a time both ways.
func (h *handler) logs(w http.ResponseWriter, r *http.Request, s store.Session) error {
	q := r.URL.Query()
	d := logsData{Statuses: logStatuses, Kinds: event.Kinds, Filter: logFilter{
		Webhook: q.Get("webhook"), WebhookName: q.Get("webhook_name"), Status: store.LogStatus(q.Get("status")),
		Event: event.Kind(q.Get("event")), EventID: strings.TrimSpace(q.Get("event_id")),
		From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")),
	}}
	f := d.Filter.check(&d.Errors)
	d.Filtered = d.Filter != logFilter{}
	f.Page = pageFrom(q, logsPerPage)
	ctx := r.Context()
	win, err := h.store.LogWindow(ctx, s.AccountID, f)
	if err != nil {
		return err
	}
	if d.Count, d.More, err = h.store.CountLogs(ctx, s.AccountID, f, logCountLimit); err != nil {
		return err
	}
	// The names of this page's webhooks (and the chosen one), by id: a
	// page names at most 26 webhooks however many the account has.
	ids := []string{}
	if d.Filter.Webhook != "" {
		ids = append(ids, d.Filter.Webhook)
	}
	for _, l := range win.Items {
		ids = append(ids, l.WebhookID)
	}
	names, err := h.store.WebhookNames(ctx, s.AccountID, ids)
	if err != nil {
		return err
	}
	d.WebhookName = names[d.Filter.Webhook]
	for _, l := range win.Items {
		d.Logs = append(d.Logs, logRow{EventLog: l, WebhookName: names[l.WebhookID]})
	}
	d.Pages = newPager(win, f.Page, d.Filter.url)
	status := http.StatusOK
	if len(d.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return h.render(w, r, status, "logs", d)
}

// check validates the filter into the store's, recording an error naming
// each field that is wrong and dropping that field, so that the page still
// lists what the other filters keep.
func (lf *logFilter) check(errs *fieldErrors) store.LogFilter {
	if lf.Status != "" && !lf.Status.Valid() {
		errs.add("status", "Status: choose a status from the list.")
		lf.Status = ""
	}
	if lf.Event != "" && !lf.Event.Valid() {
		errs.add("event", "Event: choose an event from the list.")
		lf.Event = ""
	}
	if utf8.RuneCountInString(lf.WebhookName) > maxSearch {
		errs.add("webhook_name", "Webhook name: enter at most 200 characters.")
		lf.WebhookName = ""
	}
	if lf.EventID != "" {
		if u, err := uuid.Parse(lf.EventID); err != nil || len(lf.EventID) != 36 {
			errs.add("event_id", "Event id: enter an event's whole id, as in its payload, such as 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.")
			lf.EventID = ""
		} else {
			lf.EventID = u.String() // ids are stored in lowercase
		}
	}
	from, ok := parseDay(lf.From, false)
	if !ok {
		errs.add("from", "From: enter a date as YYYY-MM-DD (UTC), such as 2026-11-25.")
		lf.From = ""
	}
	to, ok := parseDay(lf.To, true)
	if !ok {
		errs.add("to", "To: enter a date as YYYY-MM-DD (UTC), such as 2026-11-25.")
		lf.To = ""
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		errs.add("to", "To: choose a date on or after From.")
		lf.To, to = "", time.Time{}
	}
	return store.LogFilter{WebhookID: lf.Webhook, WebhookSearch: lf.WebhookName, Status: lf.Status, Event: lf.Event,
		EventID: lf.EventID, From: from, To: to}
}

// parseDay reads a date, or a date and time (as a datetime-local field
// sends it), in UTC. A day given as the end of a range (end) includes that
// whole day: the range ends at the next midnight.
func parseDay(s string, end bool) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, true
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// url is the list's address with this filter and one paging parameter.
func (f logFilter) url(key, value string) string {
	v := url.Values{}
	for _, p := range [][2]string{{"webhook", f.Webhook}, {"webhook_name", f.WebhookName}, {"status", string(f.Status)},
		{"event", string(f.Event)}, {"event_id", f.EventID}, {"from", f.From}, {"to", f.To}, {key, value}} {
		if p[0] != "" && p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	if len(v) == 0 {
		return "/webhook-event-logs"
	}
	return "/webhook-event-logs?" + v.Encode()
}

// WithoutWebhook is the list's address with every filter but the chosen
// webhook, from the newest page.
func (f logFilter) WithoutWebhook() string {
	f.Webhook = ""
	return f.url("", "")
}
