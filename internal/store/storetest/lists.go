package storetest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testWebhookListsSearchCountAndPage: a webhook list is filtered by status
// and by a search of name or URL (ASCII case ignored, % and _ literal),
// counted, read a page at a time both ways, and never shows another
// account's webhooks; names are looked up by id within the account.
func testWebhookListsSearchCountAndPage(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "other@example.com")
	theirs, err := b.St.CreateWebhook(b.Ctx, other.ID, store.NewWebhook{Name: "Alpha CRM of theirs", URL: "https://crm.example.com/",
		Events: []event.Kind{event.LicenseCreated}, Token: "whsec_theirs_0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	var all []store.Webhook // oldest first
	for _, n := range []string{"Alpha CRM", "billing", "50%_off", "5000 off", "Zoë mail", "crm-two", "ledger"} {
		all = append(all, b.Webhook(t, n))
	}
	setStatus := func(id string, h store.Health) {
		t.Helper()
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(b.Ctx, `UPDATE webhooks SET status = ? WHERE id = ?`, string(h), id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(all[1].ID, store.Unhealthy)
	setStatus(all[3].ID, store.Suspended)
	setStatus(all[5].ID, store.Suspended)

	names := func(list []store.Webhook) []string {
		var out []string
		for _, w := range list {
			out = append(out, w.Name)
		}
		return out
	}
	tests := []struct {
		name string
		f    store.WebhookFilter
		want []string // newest first
	}{
		{"everything", store.WebhookFilter{}, []string{"ledger", "crm-two", "Zoë mail", "5000 off", "50%_off", "billing", "Alpha CRM"}},
		{"name or URL, any case", store.WebhookFilter{Search: "CrM"}, []string{"crm-two", "Alpha CRM"}},
		{"URL only", store.WebhookFilter{Search: "EXAMPLE.COM/LEDGER"}, []string{"ledger"}},
		{"% is literal", store.WebhookFilter{Search: "50%"}, []string{"50%_off"}},
		{"_ is literal", store.WebhookFilter{Search: "%_o"}, []string{"50%_off"}},
		{"backslash is literal", store.WebhookFilter{Search: `\`}, nil},
		{"non-ASCII as written", store.WebhookFilter{Search: "oë"}, []string{"Zoë mail"}},
		{"status", store.WebhookFilter{Status: store.Suspended}, []string{"crm-two", "5000 off"}},
		{"status and search", store.WebhookFilter{Status: store.Suspended, Search: "crm"}, []string{"crm-two"}},
		{"nothing", store.WebhookFilter{Search: "no such"}, nil},
	}
	for _, tt := range tests {
		f := tt.f
		f.Limit = 100
		w, err := b.St.WebhookWindow(b.Ctx, b.Account.ID, f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := names(w.Items); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q; want %q", tt.name, got, tt.want)
		}
		n, err := b.St.CountWebhooks(b.Ctx, b.Account.ID, tt.f)
		if err != nil {
			t.Fatalf("%s: count: %v", tt.name, err)
		}
		if n != len(tt.want) {
			t.Errorf("%s: count %d; want %d", tt.name, n, len(tt.want))
		}
	}

	// Pages of 3 over 7 webhooks, older and back, and the oldest page.
	read := func(p store.Page) store.Window[store.Webhook] {
		t.Helper()
		p.Limit = 3
		w, err := b.St.WebhookWindow(b.Ctx, b.Account.ID, store.WebhookFilter{Page: p})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	steps := []struct {
		name         string
		page         func(prev store.Window[store.Webhook]) store.Page
		want         []string
		newer, older bool
	}{
		{"first", func(store.Window[store.Webhook]) store.Page { return store.Page{} },
			[]string{"ledger", "crm-two", "Zoë mail"}, false, true},
		{"older", func(w store.Window[store.Webhook]) store.Page { return store.Page{Cursor: w.Older} },
			[]string{"5000 off", "50%_off", "billing"}, true, true},
		{"older again, the last", func(w store.Window[store.Webhook]) store.Page { return store.Page{Cursor: w.Older} },
			[]string{"Alpha CRM"}, true, false},
		{"newer", func(w store.Window[store.Webhook]) store.Page { return store.Page{After: w.Newer} },
			[]string{"5000 off", "50%_off", "billing"}, true, true},
		{"newer again, the first", func(w store.Window[store.Webhook]) store.Page { return store.Page{After: w.Newer} },
			[]string{"ledger", "crm-two", "Zoë mail"}, false, true},
		{"oldest", func(store.Window[store.Webhook]) store.Page { return store.Page{Oldest: true} },
			[]string{"50%_off", "billing", "Alpha CRM"}, true, false},
	}
	var w store.Window[store.Webhook]
	for _, s := range steps {
		w = read(s.page(w))
		if got := names(w.Items); !slices.Equal(got, s.want) {
			t.Errorf("%s page: got %q; want %q", s.name, got, s.want)
		}
		if (w.Newer != "") != s.newer || (w.Older != "") != s.older {
			t.Errorf("%s page: newer %q, older %q; want a newer page %v, an older %v", s.name, w.Newer, w.Older, s.newer, s.older)
		}
	}

	got, err := b.St.WebhookNames(b.Ctx, b.Account.ID, []string{all[0].ID, all[6].ID, theirs.ID, store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{all[0].ID: "Alpha CRM", all[6].ID: "ledger"}; !maps(got, want) {
		t.Errorf("names %v; want %v (none of another account's)", got, want)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// testLogListsFilterCountAndPage: event logs are filtered by creation time
// (from inclusive, to exclusive) and event id, counted up to a limit, read
// both ways, carry their latest attempt's duration, and never include
// another account's.
func testLogListsFilterCountAndPage(t *testing.T, b *Bundle) {
	hook := b.Webhook(t, "w")
	other := b.NewAccount(t, "other@example.com")
	if _, err := b.St.CreateWebhook(b.Ctx, other.ID, store.NewWebhook{Name: "theirs", URL: "https://example.com/theirs",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_theirs_0123456789"}); err != nil {
		t.Fatal(err)
	}
	start := b.Clock.Now()
	var events []string // one a minute, oldest first
	for i := range 6 {
		events = append(events, b.Fire(t, b.St, 1)...)
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(b.Ctx, other.ID, event.LicenseCreated, map[string]any{"n": i})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		b.Clock.Add(time.Minute)
	}
	// The newest log gets two attempts; its duration is the second's.
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	var outs []store.Outcome
	for _, cl := range c {
		if cl.EventID == events[5] {
			o := Outcome(cl, store.Retry, 503, b.Clock.Now())
			outs = append(outs, o)
		}
	}
	b.Complete(t, b.St, 100, outs...)
	c = b.Claim(t, b.St, 2*time.Minute, time.Minute, 100, 100)
	outs = outs[:0]
	for _, cl := range c {
		if cl.EventID == events[5] {
			o := Outcome(cl, store.Delivered, 200, b.Clock.Now().Add(2*time.Minute))
			o.Attempt.Duration = 1234 * time.Millisecond
			outs = append(outs, o)
		}
	}
	b.Complete(t, b.St, 100, outs...)

	eventsOf := func(list []store.EventLog) []string {
		var out []string
		for _, l := range list {
			out = append(out, l.EventID)
		}
		return out
	}
	rev := func(ids ...string) []string { out := slices.Clone(ids); slices.Reverse(out); return out }
	tests := []struct {
		name string
		f    store.LogFilter
		want []string
	}{
		{"everything", store.LogFilter{}, rev(events...)},
		{"from, inclusive", store.LogFilter{From: start.Add(2 * time.Minute)}, rev(events[2:]...)},
		{"to, exclusive", store.LogFilter{To: start.Add(2 * time.Minute)}, rev(events[:2]...)},
		{"from and to", store.LogFilter{From: start.Add(time.Minute), To: start.Add(3 * time.Minute)}, rev(events[1:3]...)},
		{"event id", store.LogFilter{EventID: events[3]}, events[3:4]},
		{"event id and webhook", store.LogFilter{EventID: events[3], WebhookID: hook.ID}, events[3:4]},
		{"event id out of range", store.LogFilter{EventID: events[3], From: start.Add(4 * time.Minute)}, nil},
	}
	for _, tt := range tests {
		f := tt.f
		f.Limit = 100
		w, err := b.St.LogWindow(b.Ctx, b.Account.ID, f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := eventsOf(w.Items); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v; want %v", tt.name, got, tt.want)
		}
		for _, limit := range []int{100, 3} {
			n, more, err := b.St.CountLogs(b.Ctx, b.Account.ID, tt.f, limit)
			if err != nil {
				t.Fatalf("%s: count: %v", tt.name, err)
			}
			wantN, wantMore := len(tt.want), len(tt.want) > limit
			if wantMore {
				wantN = limit
			}
			if n != wantN || more != wantMore {
				t.Errorf("%s: count up to %d: %d, more %v; want %d, more %v", tt.name, limit, n, more, wantN, wantMore)
			}
		}
	}

	all := b.logs(t, store.LogFilter{})
	if d := all[0].LastDuration; d == nil || *d != 1234*time.Millisecond {
		t.Errorf("newest log's duration %v; want its latest attempt's, 1.234s", d)
	}
	if d := all[1].LastDuration; d != nil {
		t.Errorf("a log never attempted has duration %v; want none", *d)
	}

	// Pages of 4 both ways, and a range read both ways.
	read := func(f store.LogFilter) store.Window[store.EventLog] {
		t.Helper()
		f.Limit = 4
		w, err := b.St.LogWindow(b.Ctx, b.Account.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := read(store.LogFilter{})
	older := read(store.LogFilter{Page: store.Page{Cursor: first.Older}})
	back := read(store.LogFilter{Page: store.Page{After: older.Newer}})
	oldest := read(store.LogFilter{Page: store.Page{Oldest: true}})
	for _, s := range []struct {
		name         string
		w            store.Window[store.EventLog]
		want         []string
		newer, older bool
	}{
		{"first", first, rev(events[2:]...), false, true},
		{"older", older, rev(events[:2]...), true, false},
		{"back to newer", back, rev(events[2:]...), false, true},
		{"oldest", oldest, rev(events[:4]...), true, false},
	} {
		if got := eventsOf(s.w.Items); !slices.Equal(got, s.want) {
			t.Errorf("%s page: got %v; want %v", s.name, got, s.want)
		}
		if (s.w.Newer != "") != s.newer || (s.w.Older != "") != s.older {
			t.Errorf("%s page: newer %q, older %q; want a newer page %v, an older %v", s.name, s.w.Newer, s.w.Older, s.newer, s.older)
		}
	}
	ranged := store.LogFilter{From: start.Add(time.Minute)}
	r1 := read(ranged)
	ranged.Page = store.Page{Cursor: r1.Older}
	r2 := read(ranged)
	if got := append(eventsOf(r1.Items), eventsOf(r2.Items)...); !slices.Equal(got, rev(events[1:]...)) || r2.Older != "" {
		t.Errorf("a range read in pages: %v (older %q); want %v and no further page", got, r2.Older, rev(events[1:]...))
	}

	// A webhook's name searched, % and _ literal, ASCII case ignored.
	b.Clock.Add(time.Minute)
	second, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "CRM_Sync", URL: "https://example.com/crm",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_crm_0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	last := b.Fire(t, b.St, 1)[0]
	for _, tt := range []struct {
		search string
		want   []string // webhook ids
	}{
		{"crm_", []string{second.ID}},
		{"_", []string{second.ID}},
		{"%", nil},
		{"W", []string{hook.ID}},
	} {
		w, err := b.St.LogWindow(b.Ctx, b.Account.ID, store.LogFilter{WebhookSearch: tt.search, EventID: last, Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range w.Items {
			got = append(got, l.WebhookID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("logs of webhooks named like %q: %v; want %v", tt.search, got, tt.want)
		}
	}
	// Several webhooks named alike, and another account's name: the
	// search is resolved to the account's webhooks before the logs are
	// read, listed and counted alike.
	crmToo := "w (crm)"
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, hook.ID, store.WebhookPatch{Name: &crmToo}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		search string
		want   int
	}{{"CRM", 2}, {"(crm)", 1}, {"theirs", 0}} {
		f := store.LogFilter{WebhookSearch: tt.search, EventID: last}
		if got := b.logs(t, f); len(got) != tt.want {
			t.Errorf("logs of webhooks named like %q: %d; want %d", tt.search, len(got), tt.want)
		}
		if n, _, err := b.St.CountLogs(b.Ctx, b.Account.ID, f, 10); err != nil || n != tt.want {
			t.Errorf("logs of webhooks named like %q counted: %d, %v; want %d", tt.search, n, err, tt.want)
		}
	}

	// A range holding more logs than LogWindow sorts is read by walking
	// the logs in id order: the same rows, newest first.
	b.Clock.Add(time.Minute)
	bulkStart := b.Clock.Now()
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		for i := range 1100 { // 2,200 logs: both webhooks subscribe
			if _, err := tx.Fire(b.Ctx, b.Account.ID, event.LicenseCreated, map[string]any{"n": i}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Add(time.Minute)
	after := b.Fire(t, b.St, 1)[0]
	big := store.LogFilter{From: bulkStart, To: b.Clock.Now(), Page: store.Page{Limit: 25}}
	w, err := b.St.LogWindow(b.Ctx, b.Account.ID, big)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Items) != 25 || w.Older == "" || w.Newer != "" {
		t.Fatalf("a range of 2,200 logs: %d logs, older %q, newer %q; want 25, an older page, no newer", len(w.Items), w.Older, w.Newer)
	}
	for i, l := range w.Items {
		if l.EventID == after || l.CreatedAt.Before(bulkStart) || (i > 0 && l.ID >= w.Items[i-1].ID) {
			t.Fatalf("a range of 2,200 logs: log %d (%s, created %v) is out of the range or of order", i, l.ID, l.CreatedAt)
		}
	}
	if n, more, err := b.St.CountLogs(b.Ctx, b.Account.ID, big, 10000); err != nil || n != 2200 || more {
		t.Errorf("count of the range: %d, more %v, %v; want 2200", n, more, err)
	}
}

// testLogDateRangesAreExactToTheMillisecond: an event's and its logs' ids
// are of the firing's millisecond, the instant stored as their
// triggered_at and created_at, and a date range finds exactly the logs
// created in its milliseconds, at any instant inside them, through lists
// and counts (on PostgreSQL through the ids alone, decision 0100).
func testLogDateRangesAreExactToTheMillisecond(t *testing.T, b *Bundle) {
	b.Webhook(t, "one")
	b.Webhook(t, "two")
	idMS := func(id string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(id[:8]+id[9:13], 16, 64)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		return v
	}
	// Events 0.4 ms apart: some milliseconds hold two, and each instant
	// falls inside its millisecond.
	fired := map[string]time.Time{} // event id → the instant it fired
	var order []string
	b.Clock.Add(300 * time.Microsecond)
	for range 8 {
		for _, id := range b.Fire(t, b.St, 1) {
			fired[id] = b.Clock.Now()
			order = append(order, id)
			if idMS(id) != b.Clock.Now().UnixMilli() {
				t.Errorf("event %s made at %v: its id's millisecond is %d", id, b.Clock.Now(), idMS(id))
			}
		}
		b.Clock.Add(400 * time.Microsecond)
	}
	all := b.logs(t, store.LogFilter{})
	if len(all) != 2*len(order) {
		t.Fatalf("%d logs of %d events to two webhooks", len(all), len(order))
	}
	for _, l := range all {
		if idMS(l.ID) != l.CreatedAt.UnixMilli() || l.CreatedAt.UnixMilli() != fired[l.EventID].UnixMilli() {
			t.Errorf("log %s of event fired at %v: created at %v", l.ID, fired[l.EventID], l.CreatedAt)
		}
		if l.ID <= l.EventID {
			t.Errorf("log %s sorts before its event %s", l.ID, l.EventID)
		}
	}
	start := fired[order[0]]
	for _, r := range []struct{ from, to time.Duration }{
		{0, 0}, {time.Millisecond, 2 * time.Millisecond}, {700 * time.Microsecond, 1700 * time.Microsecond},
		{time.Millisecond, 0}, {0, 2 * time.Millisecond}, {2 * time.Millisecond, 2 * time.Millisecond}, {3 * time.Millisecond, time.Hour},
	} {
		f := store.LogFilter{}
		if r.from > 0 {
			f.From = start.Add(r.from)
		}
		if r.to > 0 {
			f.To = start.Add(r.to)
		}
		var want []string // newest first
		for _, id := range slices.Backward(order) {
			at := fired[id].UnixMilli()
			if (f.From.IsZero() || at >= f.From.UnixMilli()) && (f.To.IsZero() || at < f.To.UnixMilli()) {
				want = append(want, id, id)
			}
		}
		var got []string
		for _, l := range b.logs(t, f) {
			got = append(got, l.EventID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("from %v to %v after the first: events %v; want %v", r.from, r.to, got, want)
		}
		if n, _, err := b.St.CountLogs(b.Ctx, b.Account.ID, f, 100); err != nil || n != len(want) {
			t.Errorf("from %v to %v after the first: counted %d, %v; want %d", r.from, r.to, n, err, len(want))
		}
	}
}

// testAnEventsLogsAreFoundByItsID: each log's id is made from its event's
// (decision 0104): within the event's range (store.EventLogIDs), after the
// event's id and before the next event's, in the order of the webhooks
// they were made for, and the event filter finds exactly them, in a batch
// of events as for one.
func testAnEventsLogsAreFoundByItsID(t *testing.T, b *Bundle) {
	var hooks []string
	for _, name := range []string{"one", "two", "three"} {
		hooks = append(hooks, b.Webhook(t, name).ID)
	}
	slices.Sort(hooks)
	firings := make([]store.Firing, 4)
	for i := range firings {
		firings[i] = store.Firing{AccountID: b.Account.ID, Kind: event.LicenseCreated, Data: map[string]any{"n": i}}
	}
	var events []string
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		var err error
		events, err = tx.FireBatch(b.Ctx, firings)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	events = append(events, b.Fire(t, b.St, 1)...)
	for i, ev := range events {
		logs := b.logs(t, store.LogFilter{EventID: ev})
		if n, _, err := b.St.CountLogs(b.Ctx, b.Account.ID, store.LogFilter{EventID: ev}, 100); err != nil || n != len(hooks) {
			t.Errorf("event %s: counted %d logs, %v; want %d", ev, n, err, len(hooks))
		}
		if len(logs) != len(hooks) {
			t.Fatalf("event %s: %d logs; want one a webhook, %d", ev, len(logs), len(hooks))
		}
		slices.SortFunc(logs, func(x, y store.EventLog) int { return strings.Compare(x.ID, y.ID) })
		lo, hi, ok := store.EventLogIDs(ev)
		for j, l := range logs {
			if l.EventID != ev || !ok || l.ID < lo || l.ID >= hi || l.ID <= ev {
				t.Errorf("log %s of event %s: outside its range [%s, %s)", l.ID, ev, lo, hi)
			}
			if i+1 < len(events) && l.ID >= events[i+1] {
				t.Errorf("log %s of event %s sorts after the next event %s", l.ID, ev, events[i+1])
			}
			if l.WebhookID != hooks[j] {
				t.Errorf("event %s: its log %d by id is of webhook %s; want %s, in the order made", ev, j, l.WebhookID, hooks[j])
			}
		}
	}
}
