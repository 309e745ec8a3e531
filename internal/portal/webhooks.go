package portal

import (
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/store"
)

const webhooksPerPage = 50

// maxSearch bounds a search's length: longer text names no webhook.
const maxSearch = 200

var healthStates = []store.Health{store.Healthy, store.Unhealthy, store.Suspended}

type webhookFilter struct {
	Search string
	Status store.Health
}

type webhooksData struct {
	Filter   webhookFilter
	Filtered bool
	Statuses []store.Health
	Webhooks []store.Webhook
	Total    int // the account's webhooks
	Matching int // those the filter keeps
	Pages    pager
	Self     string // this page's address, where row actions come back to
	Errors   fieldErrors
}

// webhooks lists the account's webhooks, newest first, searched by name or
// URL and filtered by health, a page at a time both ways.
func (h *handler) webhooks(w http.ResponseWriter, r *http.Request, s store.Session) error {
	q := r.URL.Query()
	d := webhooksData{Statuses: healthStates, Filter: webhookFilter{Search: q.Get("q"), Status: store.Health(q.Get("status"))}}
	if d.Filter.Status != "" && !d.Filter.Status.Valid() {
		d.Errors.add("status", "Choose a health from the list.")
		d.Filter.Status = ""
	}
	if utf8.RuneCountInString(d.Filter.Search) > maxSearch {
		d.Errors.add("q", "Search: enter at most 200 characters.")
		d.Filter.Search = ""
	}
	d.Filtered = d.Filter != webhookFilter{}
	ctx := r.Context()
	f := store.WebhookFilter{Status: d.Filter.Status, Search: d.Filter.Search, Page: pageFrom(q, webhooksPerPage)}
	win, err := h.store.WebhookWindow(ctx, s.AccountID, f)
	if err != nil {
		return err
	}
	if d.Total, err = h.store.CountWebhooks(ctx, s.AccountID, store.WebhookFilter{}); err != nil {
		return err
	}
	d.Matching = d.Total
	if d.Filtered {
		if d.Matching, err = h.store.CountWebhooks(ctx, s.AccountID, f); err != nil {
			return err
		}
	}
	d.Webhooks = win.Items
	d.Pages = newPager(win, f.Page, d.Filter.url)
	d.Self = selfURL(r, "/webhooks")
	status := http.StatusOK
	if len(d.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	return h.render(w, r, status, "webhooks", d)
}

// url is the list's address with this filter and one paging parameter.
func (f webhookFilter) url(key, value string) string {
	v := url.Values{}
	if f.Search != "" {
		v.Set("q", f.Search)
	}
	if f.Status != "" {
		v.Set("status", string(f.Status))
	}
	if key != "" {
		v.Set(key, value)
	}
	if len(v) == 0 {
		return "/webhooks"
	}
	return "/webhooks?" + v.Encode()
}

// selfURL is the address of the page asked for, for actions on its rows to
// come back to.
func selfURL(r *http.Request, path string) string {
	q := r.URL.Query()
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
