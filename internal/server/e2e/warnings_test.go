package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/notify/smtptest"
	"github.com/heraldhq/herald/webhook"
)

// operationalKinds are the kinds a watching webhook subscribes to.
var operationalKinds = []string{"webhook.unhealthy", "webhook.suspended", "webhook.recovered"}

// healthEvent is an operational event as a receiver reads it.
type healthEvent struct {
	Event string `json:"event"`
	Data  struct {
		ID, Name, URL, Status string
		LatestFailure         *struct {
			LogID, EventID, Event, Reason, FailedAt string
			StatusCode                              *int
		}
	} `json:"data"`
}

// healthEvents reads a receiver's deliveries, checking each signature.
func healthEvents(t *testing.T, rcv *heraldtest.Receiver, token string) []healthEvent {
	t.Helper()
	var out []healthEvent
	for _, r := range rcv.Requests() {
		if err := webhook.Verify(token, r.Body, r.Header.Get("webhook-signature")); err != nil {
			t.Fatalf("delivery %s: %v", r.Body, err)
		}
		var e healthEvent
		if err := json.Unmarshal(r.Body, &e); err != nil {
			t.Fatalf("delivery %s: %v", r.Body, err)
		}
		out = append(out, e)
	}
	return out
}

// A webhook's receiver goes down until the webhook is suspended, stays down
// for two reminder periods, and comes back: its owner gets one email when it
// turns Unhealthy, one when it is suspended and one reminder per period
// (the reminders' clock moved by the test), each naming the webhook and
// linking to its page; a second webhook of the account gets an operational
// event for each change, signed with its own token; the webhook the events
// are about, though subscribed to them, gets none.
func TestWarningsReachTheOwnerAndAnotherWebhook(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testWarningsReachTheOwnerAndAnotherWebhook)
}

func testWarningsReachTheOwnerAndAnotherWebhook(t *testing.T, db string) {
	const period = 7 * 24 * time.Hour
	mail := smtptest.Start(t)
	clock := heraldtest.NewClock()
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, SMTPURL: mail.URL(),
		Delivery:  delivery.Config{MaxAttempts: 1, SuspendAfter: 3},
		PublicURL: "https://herald.example.com/", SuspendedReminder: period,
		ReminderCheck: 20 * time.Millisecond, Now: clock.Now})
	down := heraldtest.NewReceiver(t)
	down.Status(503, "maintenance")
	crm := h.CreateWebhook("Zoë's CRM", down.URL, append([]string{"license.created"}, operationalKinds...)...)
	watchRcv := heraldtest.NewReceiver(t)
	watcher := h.CreateWebhook("on-call", watchRcv.URL, operationalKinds...)
	page := "https://herald.example.com/webhooks/" + crm.ID

	// Unhealthy: one email, one event.
	failEvents(t, h, crm.ID, 1)
	msgs := mail.WaitFor(t, 1, 30*time.Second)
	failed := h.Logs("webhookId=" + crm.ID + "&status=failed")[0]
	for _, want := range []string{"Zoë's CRM", crm.ID, failed.EventID, "license.created", "HTTP 503", "receiver answered 503", "2 more events fail", page} {
		if !strings.Contains(msgs[0].Subject+"\n"+msgs[0].Text, want) {
			t.Errorf("Unhealthy email lacks %q:\n%s\n%s", want, msgs[0].Subject, msgs[0].Text)
		}
	}
	if !strings.Contains(msgs[0].Subject, "Unhealthy") || msgs[0].To[0] != h.Email {
		t.Errorf("first email %q to %v; want the Unhealthy warning to %s", msgs[0].Subject, msgs[0].To, h.Email)
	}
	heraldtest.Eventually(t, 30*time.Second, "the watcher's webhook.unhealthy", func() bool { return watchRcv.Count() >= 1 })

	// A failure more: nothing new. Then suspended: one email, one event.
	// One event at a time, so the last created is the last to fail, the
	// one the suspension names (two at once may complete in either order).
	failEvents(t, h, crm.ID, 1)
	failEvents(t, h, crm.ID, 1)
	if got := h.Webhook(crm.ID).Status; got != "Suspended" {
		t.Fatalf("after 3 failed events: %s; want Suspended", got)
	}
	msgs = mail.WaitFor(t, 2, 30*time.Second)
	last := h.Logs("webhookId=" + crm.ID + "&status=failed")[0]
	for _, want := range []string{"Zoë's CRM", "suspended", last.EventID, "HTTP 503", "does not lift the suspension", page} {
		if !strings.Contains(msgs[1].Subject+"\n"+msgs[1].Text, want) {
			t.Errorf("suspension email lacks %q:\n%s\n%s", want, msgs[1].Subject, msgs[1].Text)
		}
	}
	heraldtest.Eventually(t, 30*time.Second, "the watcher's webhook.suspended", func() bool { return watchRcv.Count() >= 2 })

	// Reminders: one per period (that none comes before its period, and
	// one per period however often processes look, storetest shows). The
	// herald's clock moves on by a period, once the deliveries and emails
	// under way are recorded (a lease it passed would end under them); the
	// reminder is the third email.
	h.Settled()
	clock.Advance(period)
	msgs = mail.WaitFor(t, 3, 30*time.Second)
	if !strings.Contains(msgs[2].Subject, "still suspended") || !strings.Contains(msgs[2].Text, page) {
		t.Errorf("third email %q:\n%s\nwant the reminder with the page", msgs[2].Subject, msgs[2].Text)
	}
	h.Settled()
	clock.Advance(period)
	msgs = mail.WaitFor(t, 4, 30*time.Second)
	if !strings.Contains(msgs[3].Subject, "still suspended") {
		t.Errorf("fourth email %q; want the second reminder", msgs[3].Subject)
	}
	// Each reminder is queued in the database before it is sent: two
	// periods, two reminders, though the job looked every 20 ms.
	emails, err := h.Server.Store.Emails(t.Context(), accountOf(t, h))
	if err != nil {
		t.Fatal(err)
	}
	if len(emails) != 4 {
		t.Errorf("%d emails queued; want 4 (Unhealthy, suspended, two reminders)", len(emails))
	}

	// Back up, one resend: Healthy, and the watcher hears it.
	down.Status(200, "ok")
	h.Must(200, "POST", "/v3/webhook-event-logs/"+last.ID+"/resend", nil, nil)
	if got := h.Webhook(crm.ID).Status; got != "Healthy" {
		t.Fatalf("after a good resend: %s; want Healthy", got)
	}
	heraldtest.Eventually(t, 30*time.Second, "the watcher's webhook.recovered", func() bool { return watchRcv.Count() >= 3 })

	got := healthEvents(t, watchRcv, watcher.Token)
	want := []struct{ event, status string }{{"webhook.unhealthy", "Unhealthy"}, {"webhook.suspended", "Suspended"}, {"webhook.recovered", "Healthy"}}
	if len(got) != len(want) {
		t.Fatalf("watcher got %d events; want %d", len(got), len(want))
	}
	for i, w := range want {
		e := got[i]
		if e.Event != w.event || e.Data.ID != crm.ID || e.Data.Name != "Zoë's CRM" || e.Data.URL != down.URL || e.Data.Status != w.status {
			t.Errorf("event %d: %+v; want %s of %s, %s", i, e, w.event, crm.ID, w.status)
		}
		if f := e.Data.LatestFailure; f == nil || f.StatusCode == nil || *f.StatusCode != 503 || f.Event != "license.created" {
			t.Errorf("event %d: latest failure %+v; want the 503 of a license.created", i, f)
		}
	}
	if f := got[1].Data.LatestFailure; f != nil && f.EventID != last.EventID {
		t.Errorf("suspension names event %s; want the last failed, %s", f.EventID, last.EventID)
	}
	// The webhook the events are about got only its license events.
	for _, r := range down.Requests() {
		var p struct{ Event string }
		json.Unmarshal(r.Body, &p)
		if p.Event != "license.created" {
			t.Errorf("the webhook was sent a %s about itself", p.Event)
		}
	}
	if n := len(h.Logs("webhookId=" + crm.ID + "&event=webhook.suspended")); n != 0 {
		t.Errorf("the webhook has %d logs of its own suspension", n)
	}
	if n := len(mail.Messages()); n != 4 {
		t.Errorf("%d emails sent; want 4 (no email for a recovery)", n)
	}
}

// accountOf returns the id of the herald's account.
func accountOf(t *testing.T, h *heraldtest.Herald) string {
	t.Helper()
	var a struct{ ID string }
	h.Must(200, "GET", "/v3/account", nil, &a)
	return a.ID
}

// fireOperationalKinds makes a webhook Unhealthy, Suspended and Healthy
// again, and returns one real payload of each operational kind, as a
// second webhook received them.
func fireOperationalKinds(t *testing.T) map[string]delivered {
	t.Helper()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 2}})
	rcv, _ := watch(t, h, operationalKinds...)
	down := heraldtest.NewReceiver(t)
	down.Status(500, "")
	flaky := h.CreateWebhook("Zoë's CRM", down.URL, "license.created")
	// One at a time: two failures recorded in one batch would go from
	// Healthy to Suspended at once, and only where a batch ends is told.
	failEvents(t, h, flaky.ID, 1)
	failEvents(t, h, flaky.ID, 1)
	down.Status(200, "")
	h.Must(200, "POST", "/v3/webhook-event-logs/"+h.Logs("webhookId=" + flaky.ID)[0].ID+"/resend", nil, nil)
	out := map[string]delivered{}
	for _, d := range receive(t, rcv, len(operationalKinds)) {
		out[d.Event] = d
	}
	return out
}

// Three processes on one PostgreSQL, each looking for reminders every 10 ms
// by one clock: each period gives the suspended webhook one reminder, not
// one per process.
func TestFleetRemindsOncePerPeriod(t *testing.T) {
	t.Parallel()
	const period = 7 * 24 * time.Hour
	mail := smtptest.Start(t)
	clock := heraldtest.NewClock()
	fleet := startFleet(t, 3, heraldtest.Options{SMTPURL: mail.URL(), Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 1},
		SuspendedReminder: period, ReminderCheck: 10 * time.Millisecond, Now: clock.Now})
	h := fleet[0]
	down := heraldtest.NewReceiver(t)
	down.Status(500, "")
	hook := h.CreateWebhook("shared", down.URL, "license.created")
	failEvents(t, h, hook.ID, 1)
	mail.WaitFor(t, 1, 30*time.Second) // the suspension
	h.Settled()
	clock.Advance(period)
	mail.WaitFor(t, 2, 30*time.Second)
	// A second period: its reminder comes after every process has had the
	// first period's due webhook in view many times over.
	h.Settled()
	clock.Advance(period)
	mail.WaitFor(t, 3, 30*time.Second)
	var reminders int
	if err := h.Server.Store.QueryRow(context.Background(), `SELECT COUNT(*) FROM emails WHERE kind = 'reminder'`).Scan(&reminders); err != nil {
		t.Fatal(err)
	}
	if reminders != 2 {
		t.Errorf("%d reminders queued over two periods by three processes; want 2", reminders)
	}
	for _, m := range mail.Messages()[1:] {
		if !strings.Contains(m.Subject, `"shared" is still suspended`) {
			t.Errorf("email %q; want a reminder", m.Subject)
		}
	}
}
