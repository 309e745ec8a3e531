package portal

import (
	"net/http"
	"net/url"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

const logsPerPage = 25

// logRow is an event log with its webhook's name.
type logRow struct {
	store.EventLog
	WebhookName string
}

type logFilter struct {
	Webhook string
	Status  store.LogStatus
	Event   event.Kind
}

type logsData struct {
	Filter   logFilter
	Filtered bool
	Webhooks []store.Webhook
	Statuses []store.LogStatus
	Kinds    []event.Kind
	Logs     []logRow
	Next     string // URL of the older page, "" on the last
	First    string // URL of the newest page, "" when on it
	Errors   fieldErrors
}

var logStatuses = []store.LogStatus{store.Queued, store.Pending, store.Retrying, store.Succeeded, store.Failed, store.Cancelled}

// logs lists event logs newest first, filtered by webhook, status and event
// kind, a page at a time.
func (h *handler) logs(w http.ResponseWriter, r *http.Request, s store.Session) error {
	q := r.URL.Query()
	d := logsData{Statuses: logStatuses, Kinds: event.Kinds,
		Filter: logFilter{Webhook: q.Get("webhook"), Status: store.LogStatus(q.Get("status")), Event: event.Kind(q.Get("event"))}}
	if d.Filter.Status != "" && !d.Filter.Status.Valid() {
		d.Errors.add("status", "Choose a status from the list.")
		d.Filter.Status = ""
	}
	if d.Filter.Event != "" && !d.Filter.Event.Valid() {
		d.Errors.add("event", "Choose an event from the list.")
		d.Filter.Event = ""
	}
	d.Filtered = d.Filter != logFilter{}
	hooks, _, err := h.store.Webhooks(r.Context(), s.AccountID, store.WebhookFilter{Page: store.Page{Limit: 500}})
	if err != nil {
		return err
	}
	d.Webhooks = hooks
	names := make(map[string]string, len(hooks))
	for _, w := range hooks {
		names[w.ID] = w.Name
	}
	cursor := q.Get("cursor")
	logs, next, err := h.store.Logs(r.Context(), s.AccountID, store.LogFilter{WebhookID: d.Filter.Webhook, Status: d.Filter.Status,
		Event: d.Filter.Event, Page: store.Page{Limit: logsPerPage, Cursor: cursor}})
	if err != nil {
		return err
	}
	for _, l := range logs {
		d.Logs = append(d.Logs, logRow{EventLog: l, WebhookName: names[l.WebhookID]})
	}
	if next != "" {
		d.Next = d.Filter.url(next)
	}
	if cursor != "" {
		d.First = d.Filter.url("")
	}
	status := http.StatusOK
	if len(d.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return h.render(w, r, status, "logs", d)
}

// url is the list's address with this filter, from cursor on.
func (f logFilter) url(cursor string) string {
	v := url.Values{}
	for k, s := range map[string]string{"webhook": f.Webhook, "status": string(f.Status), "event": string(f.Event), "cursor": cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if len(v) == 0 {
		return "/webhook-event-logs"
	}
	return "/webhook-event-logs?" + v.Encode()
}
