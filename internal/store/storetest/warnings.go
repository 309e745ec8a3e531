package storetest

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// emailsOf lists the account's emails of a kind, oldest first: each queued
// with its facts, its words left to package notify (whose tests hold the
// words to the facts).
func (b *Bundle) emailsOf(t testing.TB, kind string) []store.Email {
	t.Helper()
	all, err := b.St.Emails(b.Ctx, b.Account.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Email
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Kind != kind {
			continue
		}
		if all[i].Facts == nil || all[i].Subject != "" || all[i].Body != "" {
			t.Fatalf("a %s email queued with facts %+v and words %q %q; want facts only", kind, all[i].Facts, all[i].Subject, all[i].Body)
		}
		out = append(out, all[i])
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ? AND kind = ?`, b.Account.ID, kind); n != len(out) {
		t.Fatalf("%d emails of kind %s, %d listed", n, kind, len(out))
	}
	return out
}

// failureIs says whether an email's latest failure is the log's, with its
// event and the receiver's status code.
func failureIs(f *event.Failure, l store.EventLog, logID string, code int) bool {
	return f != nil && f.EventID == l.EventID && f.LogID == logID && f.Event == l.Event && f.StatusCode != nil && *f.StatusCode == code
}

// operational lists the operational events a webhook was sent, oldest
// first, with their data.
func (b *Bundle) operational(t testing.TB, webhookID string) []event.WebhookHealth {
	t.Helper()
	logs := b.logs(t, store.LogFilter{WebhookID: webhookID})
	var out []event.WebhookHealth
	for i := len(logs) - 1; i >= 0; i-- {
		if !logs[i].Event.Operational() {
			continue
		}
		var p struct {
			Event event.Kind
			Data  event.WebhookHealth
		}
		if err := json.Unmarshal(logs[i].Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", logs[i].Payload, err)
		}
		if p.Event != logs[i].Event {
			t.Fatalf("log of %s carries a %s payload", logs[i].Event, p.Event)
		}
		out = append(out, p.Data)
	}
	return out
}

// testWarnings takes a webhook from Healthy to Unhealthy, to Suspended and
// back: an email for each of the first two, naming the webhook, the failed
// event, the receiver's answer and the reason, and linking to the webhook's
// page; and an operational event of each change to the account's other
// webhook that subscribes to them, never to the webhook itself.
func testWarnings(t *testing.T, b *Bundle) {
	const suspendAfter = 3
	ops := []event.Kind{event.LicenseCreated, event.WebhookUnhealthy, event.WebhookSuspended, event.WebhookRecovered}
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "w", URL: "https://example.com/w",
		Events: ops, Enabled: true, Token: "whsec_w_0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "watcher", URL: "https://example.com/watcher",
		Events: ops[1:], Enabled: true, Token: "whsec_watcher_0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	other := b.NewAccount(t, "other@example.com")
	stranger, err := b.St.CreateWebhook(b.Ctx, other.ID, store.NewWebhook{Name: "stranger", URL: "https://example.com/s",
		Events: ops[1:], Enabled: true, Token: "whsec_stranger_0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	b.Fire(t, b.St, 4)
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if len(c) != 4 {
		t.Fatalf("claimed %d; want 4 (the events of w)", len(c))
	}
	now := b.Clock.Now()

	b.Complete(t, b.St, suspendAfter, Outcome(c[0], store.Exhausted, 503, now))
	un := b.emailsOf(t, store.EmailUnhealthy)
	if len(un) != 1 {
		t.Fatalf("%d Unhealthy emails; want 1", len(un))
	}
	first := b.log(t, c[0].LogID)
	if f := un[0].Facts; f.Name != "w" || f.WebhookID != w.ID || f.URL != w.URL || !failureIs(f.Failure, first, c[0].LogID, 503) ||
		f.Failure.Reason != "receiver answered 503; no attempts left" || f.SuspendAfter-f.Streak != 2 {
		t.Errorf("Unhealthy email's facts %+v (failure %+v); want w, its failed event, the 503 and its reason, 2 more failures to suspend", f, f.Failure)
	}
	if un[0].To != b.Account.NotificationEmail {
		t.Errorf("Unhealthy email to %s; want %s", un[0].To, b.Account.NotificationEmail)
	}
	got := b.operational(t, watcher.ID)
	if len(got) != 1 || got[0].ID != w.ID || got[0].Name != "w" || got[0].URL != w.URL || got[0].Status != "Unhealthy" ||
		got[0].LatestFailure == nil || got[0].LatestFailure.EventID != first.EventID || got[0].LatestFailure.LogID != c[0].LogID ||
		got[0].LatestFailure.StatusCode == nil || *got[0].LatestFailure.StatusCode != 503 || got[0].LatestFailure.Event != event.LicenseCreated {
		t.Fatalf("watcher got %+v; want w's turn to Unhealthy with its failure", got)
	}

	// A failure more while Unhealthy: no warning. Then the suspension.
	b.Complete(t, b.St, suspendAfter, Outcome(c[1], store.Exhausted, 500, now))
	if n := len(b.emailsOf(t, store.EmailUnhealthy)); n != 1 || len(b.operational(t, watcher.ID)) != 1 {
		t.Fatalf("a failure while Unhealthy warned again: %d emails, %d events", n, len(b.operational(t, watcher.ID)))
	}
	b.Complete(t, b.St, suspendAfter, Outcome(c[2], store.Exhausted, 502, now))
	sus := b.emailsOf(t, store.EmailSuspended)
	if len(sus) != 1 {
		t.Fatalf("%d suspension emails; want 1", len(sus))
	}
	third := b.log(t, c[2].LogID)
	if f := sus[0].Facts; f.Name != "w" || f.WebhookID != w.ID || !failureIs(f.Failure, third, c[2].LogID, 502) || f.SuspendAfter != suspendAfter {
		t.Errorf("suspension email's facts %+v (failure %+v); want w, its failed event and the 502, suspended after %d", f, f.Failure, suspendAfter)
	}
	got = b.operational(t, watcher.ID)
	if len(got) != 2 || got[1].Status != "Suspended" || got[1].LatestFailure == nil || got[1].LatestFailure.EventID != third.EventID {
		t.Fatalf("watcher got %+v; want the suspension second", got)
	}

	// One batch with a resend that succeeds and a failure after it: from
	// Suspended to Unhealthy, which warns as a turn to Unhealthy does.
	b.Clock.Add(time.Second) // the emails' order is their time's
	resent := Outcome(store.Claim{LogID: c[0].LogID, WebhookID: w.ID}, store.Delivered, 200, now)
	resent.Trigger = store.TriggerResend
	b.Complete(t, b.St, suspendAfter, resent, Outcome(c[3], store.Exhausted, 504, now))
	if h, streak := b.health(t, w.ID); h != store.Unhealthy || streak != 1 {
		t.Fatalf("after a delivery then a failure: %s, streak %d; want Unhealthy, 1", h, streak)
	}
	fourth := b.log(t, c[3].LogID)
	got = b.operational(t, watcher.ID)
	if len(got) != 3 || got[2].Status != "Unhealthy" || got[2].LatestFailure == nil || got[2].LatestFailure.EventID != fourth.EventID {
		t.Fatalf("watcher got %+v; want Unhealthy again third", got)
	}
	if un := b.emailsOf(t, store.EmailUnhealthy); len(un) != 2 || !failureIs(un[1].Facts.Failure, fourth, c[3].LogID, 504) {
		t.Fatalf("%d Unhealthy emails; want a second, naming the 504", len(un))
	}

	// A resend that succeeds: recovered, with the failure that preceded it,
	// and no email.
	o := Outcome(store.Claim{LogID: c[1].LogID, WebhookID: w.ID}, store.Delivered, 200, now)
	o.Trigger = store.TriggerResend
	b.Complete(t, b.St, suspendAfter, o)
	got = b.operational(t, watcher.ID)
	if len(got) != 4 || got[3].Status != "Healthy" || got[3].LatestFailure == nil || got[3].LatestFailure.EventID != fourth.EventID {
		t.Fatalf("watcher got %+v; want the recovery fourth", got)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ?`, b.Account.ID); n != 3 {
		t.Errorf("%d emails; want 3 (no email for a recovery)", n)
	}

	// Never to the webhook the event is about, though it subscribes; never
	// to another account's webhook.
	if own := b.operational(t, w.ID); len(own) != 0 {
		t.Errorf("w was sent %d events about itself", len(own))
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ?`, stranger.ID); n != 0 {
		t.Errorf("another account's webhook got %d logs", n)
	}
	// The operational events are queued like any event.
	for _, l := range b.logs(t, store.LogFilter{WebhookID: watcher.ID}) {
		if l.Status != store.Queued {
			t.Errorf("watcher's %s log is %s; want queued", l.Event, l.Status)
		}
	}
}

// testReminders: a webhook that stays Suspended is reminded of once per
// period, however many processes look at once; not before the period, not
// while disabled, and never once it recovers.
func testReminders(t *testing.T, b *Bundle) {
	const every = 7 * 24 * time.Hour
	w := b.Webhook(t, "w")
	b.Fire(t, b.St, 2)
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if sp := b.Complete(t, b.St, 1, Outcome(c[0], store.Exhausted, 500, b.Clock.Now())); len(sp) != 1 {
		t.Fatalf("%d suspensions; want 1", len(sp))
	}
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	remindAll := func() int {
		t.Helper()
		var n atomic.Int32
		Parallel(6, func(i int) {
			k, err := handles[i%len(handles)].RemindSuspended(b.Ctx, b.Clock.Now(), every)
			if err != nil {
				t.Errorf("remind: %v", err)
			}
			n.Add(int32(k))
		})
		return int(n.Load())
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    int // reminders queued by the step
	}{
		{"at once", 0, 0},
		{"a day short of the period", every - 24*time.Hour, 0},
		{"the period ends", 24 * time.Hour, 1},
		{"just after", time.Minute, 0},
		{"a period after the reminder, less a minute", every - 2*time.Minute, 0},
		{"a second period", time.Minute, 1},
	}
	for _, s := range steps {
		b.Clock.Add(s.advance)
		if got := remindAll(); got != s.want {
			t.Fatalf("%s: %d reminders; want %d", s.name, got, s.want)
		}
	}
	rem := b.emailsOf(t, store.EmailReminder)
	if len(rem) != 2 {
		t.Fatalf("%d reminder emails; want 2", len(rem))
	}
	if f := rem[0].Facts; f.Name != "w" || f.WebhookID != w.ID || f.Failure == nil || f.Failure.StatusCode == nil || *f.Failure.StatusCode != 500 ||
		f.Every != every || f.Since.IsZero() {
		t.Errorf("reminder's facts %+v (failure %+v); want w, the 500, every 7 days, since its suspension", f, f.Failure)
	}

	// Disabled: no reminder; enabled again, the one due comes.
	off, on := false, true
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Add(every)
	if got := remindAll(); got != 0 {
		t.Fatalf("a disabled webhook: %d reminders; want 0", got)
	}
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	if got := remindAll(); got != 1 {
		t.Fatalf("enabled again: %d reminders; want 1", got)
	}

	// Recovered: reminders end, and a new suspension starts a new period.
	o := Outcome(store.Claim{LogID: c[0].LogID, WebhookID: w.ID}, store.Delivered, 200, b.Clock.Now())
	o.Trigger = store.TriggerResend
	b.Complete(t, b.St, 1, o)
	b.Clock.Add(2 * every)
	if got := remindAll(); got != 0 {
		t.Fatalf("a recovered webhook: %d reminders; want 0", got)
	}
	if sp := b.Complete(t, b.St, 1, Outcome(c[1], store.Exhausted, 500, b.Clock.Now())); len(sp) != 1 {
		t.Fatalf("%d suspensions; want 1", len(sp))
	}
	b.Clock.Add(every - time.Minute)
	if got := remindAll(); got != 0 {
		t.Fatalf("suspended anew, before the period: %d reminders; want 0", got)
	}
	b.Clock.Add(time.Minute)
	if got := remindAll(); got != 1 {
		t.Fatalf("suspended anew, a period later: %d reminders; want 1", got)
	}
}
