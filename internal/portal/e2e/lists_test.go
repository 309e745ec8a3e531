package e2e_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// seed creates webhooks and events straight through a started herald's
// store: hundreds through the API would take most of a test's time.
type seed struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	account string
}

func newSeed(t *testing.T, h *heraldtest.Herald) *seed {
	s := &seed{t: t, ctx: context.Background(), st: h.Server.Store}
	if err := s.st.QueryRow(s.ctx, `SELECT id FROM accounts`).Scan(&s.account); err != nil {
		t.Fatalf("read the account: %v", err)
	}
	return s
}

// webhook creates a disabled webhook (its logs are cancelled, so nothing
// is sent) subscribed to kind.
func (s *seed) webhook(name, rawURL string, kind event.Kind) store.Webhook {
	s.t.Helper()
	w, err := s.st.CreateWebhook(s.ctx, s.account, store.NewWebhook{Name: name, URL: rawURL, Events: []event.Kind{kind},
		Token: "whsec_0123456789abcdef0123456789"})
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

// fire fires n events of kind, each in its transaction, and returns their
// ids, oldest first.
func (s *seed) fire(kind event.Kind, n int) []string {
	s.t.Helper()
	var ids []string
	for i := range n {
		err := s.st.InTx(s.ctx, func(tx *store.Tx) error {
			id, err := tx.Fire(s.ctx, s.account, kind, map[string]any{"n": i})
			ids = append(ids, id)
			return err
		})
		if err != nil {
			s.t.Fatal(err)
		}
	}
	return ids
}

// exec changes rows as time or deliveries would have.
func (s *seed) exec(q string, args ...any) {
	s.t.Helper()
	if err := s.st.InTx(s.ctx, func(tx *store.Tx) error { _, err := tx.Exec(s.ctx, q, args...); return err }); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
}

var (
	logRowRe     = regexp.MustCompile(`<tr data-log="([^"]+)">`)
	webhookRowRe = regexp.MustCompile(`<tr data-webhook="([^"]+)">`)
	countRe      = regexp.MustCompile(`<p class="count">([^<]*)</p>`)
	pagerRe      = regexp.MustCompile(`<a href="([^"]+)"[^>]*>(« Newest|‹ Newer|Older ›|Oldest »)</a>`)
)

func rows(re *regexp.Regexp, body string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func countText(body string) string {
	if m := countRe.FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// pages returns the pager's links by their words.
func pages(body string) map[string]string {
	out := map[string]string{}
	for _, m := range pagerRe.FindAllStringSubmatch(body, -1) {
		out[m[2]] = html.UnescapeString(m[1])
	}
	return out
}

// TestLogsOfAnOldWebhookAmongManyShowItsNameAndKeepItsFilter: with more
// than 500 webhooks, the logs of the oldest show its name, it can be
// chosen, and changing the status keeps it; on each engine, as are the
// other list tests, since their searches are written per engine.
func TestLogsOfAnOldWebhookAmongManyShowItsNameAndKeepItsFilter(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		s := newSeed(t, h)
		oldest := s.webhook("Oldest ledger", "https://example.com/ledger", event.LicenseCreated)
		for i := range 519 {
			s.webhook(fmt.Sprintf("Hook %03d", i), fmt.Sprintf("https://example.com/h/%03d", i), event.LicenseDeleted)
		}
		logEvent := s.fire(event.LicenseCreated, 1)[0]
		s.fire(event.LicenseDeleted, 1) // 519 newer logs of the others
		b := mustSignIn(t, h)

		// From the webhook's page, its logs: chosen and named.
		_, _, body := b.get("/webhooks/" + oldest.ID)
		link := regexp.MustCompile(`<a href="([^"]+)">All event logs of this webhook`).FindStringSubmatch(body)
		if link == nil {
			t.Fatalf("no link to the webhook's logs on its page")
		}
		code, _, body := b.get(html.UnescapeString(link[1]))
		if code != http.StatusOK {
			t.Fatalf("its logs: %d", code)
		}
		if got := rows(logRowRe, body); len(got) != 1 {
			t.Fatalf("its logs list %d rows; want its one log", len(got))
		}
		hidden := `<input type="hidden" name="webhook" value="` + oldest.ID + `">`
		for _, want := range []string{"Webhook: <strong>Oldest ledger</strong>", `<td data-label="Webhook">Oldest ledger</td>`, hidden} {
			if !strings.Contains(body, want) {
				t.Errorf("its logs lack %s", want)
			}
		}
		if strings.Contains(body, ">deleted<") {
			t.Errorf("its logs call it deleted")
		}

		// Changing the status (the form, which carries the webhook) keeps it.
		for _, tt := range []struct {
			status string
			rows   int
		}{{"cancelled", 1}, {"succeeded", 0}} {
			_, _, body := b.get("/webhook-event-logs?" + url.Values{"webhook": {oldest.ID}, "status": {tt.status}}.Encode())
			if got := rows(logRowRe, body); len(got) != tt.rows {
				t.Errorf("status %s: %d rows; want %d", tt.status, len(got), tt.rows)
			}
			if !strings.Contains(body, hidden) || !strings.Contains(body, "Webhook: <strong>Oldest ledger</strong>") {
				t.Errorf("status %s: the webhook filter is lost", tt.status)
			}
			if !strings.Contains(body, `<option value="`+tt.status+`" selected>`) {
				t.Errorf("status %s: not selected", tt.status)
			}
		}
		// The chip's remove link keeps the other filters.
		_, _, body = b.get("/webhook-event-logs?" + url.Values{"webhook": {oldest.ID}, "status": {"cancelled"}}.Encode())
		remove := regexp.MustCompile(`<a href="([^"]+)" aria-label="Remove the webhook filter`).FindStringSubmatch(body)
		if remove == nil || html.UnescapeString(remove[1]) != "/webhook-event-logs?status=cancelled" {
			t.Errorf("remove link %v; want the list with the status kept", remove)
		}

		// Unfiltered, the oldest page names the old webhook too.
		_, _, body = b.get("/webhook-event-logs?oldest=1")
		if !strings.Contains(body, `data-log=`) || !strings.Contains(body, `<td data-label="Webhook">Oldest ledger</td>`) {
			t.Errorf("the oldest page does not name the oldest webhook's log")
		}
		// And searching by name finds it among 520.
		_, _, body = b.get("/webhook-event-logs?webhook_name=LEDGER")
		if got := rows(logRowRe, body); len(got) != 1 || !strings.Contains(body, "Oldest ledger") {
			t.Errorf("webhook name search: %d rows; want the ledger's one log", len(got))
		}
		_, _, body = b.get("/webhook-event-logs?event_id=" + logEvent)
		if got := rows(logRowRe, body); len(got) != 1 || !strings.Contains(body, "Oldest ledger") {
			t.Errorf("event id search: %d rows; want the ledger's one log", len(got))
		}
	})
}

// TestWebhooksSearchFilterCountAndPage: the webhook list counts, searches
// name and URL, filters by health, and pages both ways keeping the filters.
func TestWebhooksSearchFilterCountAndPage(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		s := newSeed(t, h)
		var ids []string // oldest first
		for i := range 118 {
			ids = append(ids, s.webhook(fmt.Sprintf("Hook %03d", i), fmt.Sprintf("https://example.com/h/%03d", i), event.LicenseCreated).ID)
		}
		crm := s.webhook("CRM 50%_off", "https://crm.example.com/in", event.LicenseCreated)
		s.webhook("Billing", "https://example.com/CRM-bridge", event.LicenseCreated)
		for _, id := range ids[:60] {
			s.exec(`UPDATE webhooks SET status = 'Suspended' WHERE id = ?`, id)
		}
		s.exec(`UPDATE webhooks SET status = 'Unhealthy' WHERE id = ?`, ids[100])
		b := mustSignIn(t, h)

		tests := []struct {
			query string
			count string
			rows  int
		}{
			{"", "120 webhooks", 50},
			{"q=crm", "2 of 120 webhooks match", 2},
			{"q=CRM-BRIDGE", "1 of 120 webhooks matches", 1},
			{"q=" + url.QueryEscape("50%"), "1 of 120 webhooks matches", 1},
			{"q=_", "1 of 120 webhooks matches", 1},
			{"q=" + url.QueryEscape("5_%"), "0 of 120 webhooks match", 0},
			{"status=Suspended", "60 of 120 webhooks match", 50},
			{"status=Unhealthy", "1 of 120 webhooks matches", 1},
			{"status=Healthy&q=hook", "57 of 120 webhooks match", 50},
		}
		for _, tt := range tests {
			code, _, body := b.get("/webhooks?" + tt.query)
			if code != http.StatusOK {
				t.Errorf("%q: %d", tt.query, code)
			}
			if got := countText(body); got != tt.count {
				t.Errorf("%q: count %q; want %q", tt.query, got, tt.count)
			}
			if got := rows(webhookRowRe, body); len(got) != tt.rows {
				t.Errorf("%q: %d rows; want %d", tt.query, len(got), tt.rows)
			}
		}
		if _, _, body := b.get("/webhooks?q=" + url.QueryEscape("50%")); !strings.Contains(body, `data-webhook="`+crm.ID+`"`) {
			t.Errorf("searching 50%% does not find %q", crm.Name)
		}
		if code, _, body := b.get("/webhooks?status=Sleepy"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "Choose a health from the list.") {
			t.Errorf("unknown status: %d; want 422 naming the field", code)
		}

		// Pages both ways, each link keeping the filter: 60 suspended webhooks
		// are pages of 50 and 10.
		const filter = "status=Suspended"
		_, _, body := b.get("/webhooks?" + filter)
		first := rows(webhookRowRe, body)
		p := pages(body)
		if p["‹ Newer"] != "" || p["« Newest"] != "" || p["Older ›"] == "" || p["Oldest »"] == "" {
			t.Fatalf("first page links %v; want Older and Oldest only", p)
		}
		for words, link := range p {
			if !strings.Contains(link, filter) {
				t.Errorf("%s link %q drops the filter", words, link)
			}
		}
		_, _, body = b.get(p["Older ›"])
		second := rows(webhookRowRe, body)
		if len(second) != 10 || second[9] != ids[0] {
			t.Errorf("older page: %d rows ending %v; want the 10 oldest suspended", len(second), second)
		}
		p = pages(body)
		if p["Older ›"] != "" || p["‹ Newer"] == "" || !strings.Contains(p["‹ Newer"], filter) {
			t.Fatalf("last page links %v; want Newer with the filter, no Older", p)
		}
		_, _, body = b.get(p["‹ Newer"])
		if back := rows(webhookRowRe, body); strings.Join(back, ",") != strings.Join(first, ",") {
			t.Errorf("newer from the last page is not the first page again")
		}
		_, _, body = b.get("/webhooks?oldest=1&" + filter)
		if oldest := rows(webhookRowRe, body); len(oldest) != 50 || oldest[49] != ids[0] || oldest[0] != ids[49] {
			t.Errorf("oldest page: %d rows; want the 50 oldest suspended, newest first", len(oldest))
		}
	})
}

// TestLogsDateRangeEventIdDurationAndPaging: the log list filters by
// creation date (with errors naming the field) and event id, shows the
// latest attempt's duration, counts, and pages both ways keeping filters.
func TestLogsDateRangeEventIdDurationAndPaging(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		// The 20 oldest events fire on 2026-11-01, the next 20 on 11-02,
		// with the clock set back (a log's id is of its creation's
		// millisecond, and on PostgreSQL a date range is read as a range
		// of ids: decision 0100), the rest and the renewal now.
		clock := heraldtest.NewClock()
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL, Now: clock.Now})
		s := newSeed(t, h)
		rcv := heraldtest.NewReceiver(t)
		delivered := h.CreateWebhook("Delivered", rcv.URL, "license.renewed")
		s.webhook("Quiet", "https://example.com/quiet", event.LicenseCreated)
		day1 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		var events []string
		for i := range 60 {
			at := day1.Add(time.Duration(i) * time.Minute)
			if i >= 20 {
				at = at.AddDate(0, 0, 1)
			}
			if i >= 40 {
				at = time.Now()
			}
			clock.Advance(at.Sub(clock.Now()))
			events = append(events, s.fire(event.LicenseCreated, 1)...)
		}
		renewed := s.fire(event.LicenseRenewed, 1)[0]
		heraldtest.Eventually(t, 10*time.Second, "the renewal delivered", func() bool {
			l := h.Logs("webhookId=" + delivered.ID)
			return len(l) == 1 && l[0].Status == "succeeded"
		})
		b := mustSignIn(t, h)

		tests := []struct {
			query string
			code  int
			count string
			rows  int
			err   string
		}{
			{"", 200, "61 event logs", 25, ""},
			{"from=2026-11-01&to=2026-11-01", 200, "20 event logs match", 20, ""},
			{"from=2026-11-02", 200, "41 event logs match", 25, ""},
			{"to=2026-11-02", 200, "40 event logs match", 25, ""},
			{"from=2026-11-03&to=2026-11-03", 200, "0 event logs match", 0, ""},
			{"event_id=" + events[5], 200, "1 event log matches", 1, ""},
			{"event_id=" + strings.ToUpper(events[5]), 200, "1 event log matches", 1, ""},
			{"from=01/11/2026", 422, "61 event logs", 25, "From: enter a date as YYYY-MM-DD"},
			{"from=2026-11-02&to=2026-11-01", 422, "41 event logs match", 25, "To: choose a date on or after From."},
			{"event_id=abc", 422, "61 event logs", 25, "Event id: enter an event&#39;s whole id"},
		}
		for _, tt := range tests {
			code, _, body := b.get("/webhook-event-logs?" + tt.query)
			if code != tt.code {
				t.Errorf("%q: %d; want %d", tt.query, code, tt.code)
			}
			if got := countText(body); got != tt.count {
				t.Errorf("%q: count %q; want %q", tt.query, got, tt.count)
			}
			if got := rows(logRowRe, body); len(got) != tt.rows {
				t.Errorf("%q: %d rows; want %d", tt.query, len(got), tt.rows)
			}
			if tt.err != "" && !strings.Contains(body, tt.err) {
				t.Errorf("%q: no error %q on the page", tt.query, tt.err)
			}
		}

		// The delivered log's duration; a log never attempted has none.
		_, _, body := b.get("/webhook-event-logs?event_id=" + renewed)
		if !regexp.MustCompile(`<td data-label="Duration">\d+(\.\d+)? m?s</td>`).MatchString(body) {
			t.Errorf("the delivered log shows no duration")
		}

		// Pages both ways keep every filter: 41 logs from 11-02 on, with the
		// event kind and status chosen too, are pages of 25 and 16.
		filter := url.Values{"from": {"2026-11-02"}, "event": {"license.created"}, "status": {"cancelled"}}
		_, _, body = b.get("/webhook-event-logs?" + filter.Encode())
		if got := countText(body); got != "40 event logs match" {
			t.Errorf("count %q; want 40 (the renewal is another kind)", got)
		}
		first := rows(logRowRe, body)
		p := pages(body)
		keeps := func(link string) bool {
			u, err := url.Parse(link)
			if err != nil {
				return false
			}
			for k := range filter {
				if u.Query().Get(k) != filter.Get(k) {
					return false
				}
			}
			return true
		}
		for words, link := range p {
			if !keeps(link) {
				t.Errorf("%s link %q drops a filter", words, link)
			}
		}
		_, _, body = b.get(p["Older ›"])
		if second := rows(logRowRe, body); len(second) != 15 {
			t.Errorf("older page: %d rows; want 15", len(second))
		}
		p = pages(body)
		if p["Older ›"] != "" || !keeps(p["‹ Newer"]) {
			t.Fatalf("last page links %v; want Newer with the filters, no Older", p)
		}
		_, _, body = b.get(p["‹ Newer"])
		if back := rows(logRowRe, body); strings.Join(back, ",") != strings.Join(first, ",") {
			t.Errorf("newer from the last page is not the first page again")
		}
		if !keeps(pages(body)["Oldest »"]) {
			t.Errorf("no Oldest link with the filters")
		}
	})
}
