package main_test

import (
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// outageReceiver answers as told and counts, per event id, the deliveries
// that carried a valid signature.
type outageReceiver struct {
	*heraldtest.Receiver
	token string
}

// byEvent counts the requests from index from on, per event id, failing
// the test on any that does not verify.
func (r *outageReceiver) byEvent(t *testing.T, from int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, req := range r.Requests()[from:] {
		if err := webhook.Verify(r.token, req.Body, req.Header.Get("webhook-signature")); err != nil {
			t.Fatalf("a resend failed verification: %v", err)
		}
		p, err := webhook.Parse(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		got[p.ID]++
	}
	return got
}

type recoveryView struct {
	ID, Status                     string
	Count, Sent, Succeeded, Failed int
	FinishedAt                     *time.Time
}

type logView struct {
	ID, EventID, Status, Payload string
	Attempts                     []struct{ Trigger string }
}

// webhookLogs lists a webhook's logs, with their attempts.
func webhookLogs(t *testing.T, base, token, webhookID string) []logView {
	t.Helper()
	var list struct{ Data []logView }
	call(t, base, token, "GET", "/v3/webhook-event-logs?limit=500&webhookId="+webhookID, nil, &list)
	for i, l := range list.Data {
		call(t, base, token, "GET", "/v3/webhook-event-logs/"+l.ID, nil, &list.Data[i])
	}
	return list.Data
}

// suspend starts herald over env with a webhook whose receiver answers 503
// and fires fired licenses at once; it returns once the webhook is
// Suspended with every log complete, after firing cancelled more while it
// is Suspended.
func suspend(t *testing.T, env []string, token string, fired, cancelled int) (p *proc, rcv *outageReceiver, hookID string, since time.Time) {
	t.Helper()
	p = startServe(t, env, freeAddr(t))
	rcv = &outageReceiver{Receiver: heraldtest.NewReceiver(t)}
	rcv.Status(503, "down for maintenance")
	var hook struct{ ID, Token string }
	since = time.Now().Add(-time.Second)
	call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{"name": "outage", "url": rcv.URL, "events": []string{"license.created"}}, &hook)
	rcv.token = hook.Token
	var product struct{ ID string }
	call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	for range fired {
		call(t, p.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
	}
	heraldtest.Eventually(t, time.Minute, "the webhook suspended with every log complete", func() bool {
		var w struct{ Status string }
		call(t, p.url, token, "GET", "/v3/webhooks/"+hook.ID, nil, &w)
		if w.Status != "Suspended" {
			return false
		}
		for _, l := range webhookLogs(t, p.url, token, hook.ID) {
			if l.Status != "failed" && l.Status != "cancelled" {
				return false
			}
		}
		return true
	})
	for range cancelled {
		call(t, p.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
	}
	return p, rcv, hook.ID, since
}

// TestRecoveryAfterSuspensionResendsEveryMissedEventOnce: a receiver down
// longer than the retry window, until its webhook is suspended; then up.
// A dry run counts without sending; the recovery delivers every missed
// event exactly once more, on the same logs with the same bytes, and the
// webhook is Healthy.
func TestRecoveryAfterSuspensionResendsEveryMissedEventOnce(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	env = append(env, "HERALD_MAX_ATTEMPTS=3", "HERALD_RETRY_INTERVAL=100ms", "HERALD_SUSPEND_AFTER=3", "HERALD_ATTEMPT_TIMEOUT=5s")
	p, rcv, hookID, since := suspend(t, env, token, 6, 4)
	logs := webhookLogs(t, p.url, token, hookID)
	if len(logs) != 10 {
		t.Fatalf("%d logs; want 10", len(logs))
	}
	before := rcv.Count()
	recoverPath := "/v3/webhooks/" + hookID + "/recover"
	var dry struct{ Count int }
	call(t, p.url, token, "POST", recoverPath, map[string]any{"since": since.Format(time.RFC3339Nano), "dryRun": true}, &dry)
	if dry.Count != 10 {
		t.Fatalf("dry run counted %d; want 10 (6 failed, 4 cancelled while suspended)", dry.Count)
	}
	var recs struct{ Data []recoveryView }
	call(t, p.url, token, "GET", "/v3/webhooks/"+hookID+"/recoveries", nil, &recs)
	if len(recs.Data) != 0 || rcv.Count() != before {
		t.Fatalf("a dry run started %d recoveries and sent %d requests", len(recs.Data), rcv.Count()-before)
	}

	rcv.Status(204, "")
	var rec recoveryView
	call(t, p.url, token, "POST", recoverPath, map[string]any{"since": since.Format(time.RFC3339Nano)}, &rec)
	if rec.Count != 10 || rec.Status != "running" {
		t.Fatalf("recovery %+v; want running over 10", rec)
	}
	heraldtest.Eventually(t, time.Minute, "the recovery done", func() bool {
		call(t, p.url, token, "GET", "/v3/webhooks/"+hookID+"/recoveries/"+rec.ID, nil, &rec)
		return rec.Status == "done"
	})
	if rec.Sent != 10 || rec.Succeeded != 10 || rec.Failed != 0 || rec.FinishedAt == nil {
		t.Errorf("finished recovery %+v; want 10 sent and succeeded", rec)
	}
	var w struct{ Status string }
	call(t, p.url, token, "GET", "/v3/webhooks/"+hookID, nil, &w)
	if w.Status != "Healthy" {
		t.Errorf("webhook %s after the recovery; want Healthy", w.Status)
	}
	got := rcv.byEvent(t, before)
	payloads := map[string]string{}
	for _, req := range rcv.Requests()[before:] {
		p, _ := webhook.Parse(req.Body)
		payloads[p.ID] = string(req.Body)
	}
	for _, l := range webhookLogs(t, p.url, token, hookID) {
		resends := 0
		for _, a := range l.Attempts {
			if a.Trigger == "resend" {
				resends++
			}
		}
		if l.Status != "succeeded" || resends != 1 || got[l.EventID] != 1 || payloads[l.EventID] != l.Payload {
			t.Errorf("log %s: %s, %d resends, event received %d times since the outage, same bytes %v; want succeeded, 1, 1, true",
				l.ID, l.Status, resends, got[l.EventID], payloads[l.EventID] == l.Payload)
		}
	}
	if len(got) != 10 {
		t.Errorf("%d events received after the outage; want 10", len(got))
	}
}

// TestKilledRecoveryFinishesWithoutSendingALogTwice kills herald while a
// recovery has resends in flight. After the restart the recovery finishes:
// no event reaches the receiver twice, and every missed event reached it.
func TestKilledRecoveryFinishesWithoutSendingALogTwice(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	heraldtest.DumpLogsOnFailure(t, strings.TrimPrefix(env[0], "HERALD_DATABASE_URL="))
	// Three requests in flight at most, of which a recovery leaves one for
	// new events: it goes in batches of two, and the kill lands between its
	// first batch and the rest.
	env = append(env, "HERALD_MAX_ATTEMPTS=1", "HERALD_SUSPEND_AFTER=1", "HERALD_PER_WEBHOOK_CONCURRENCY=3",
		"HERALD_ATTEMPT_TIMEOUT=10s", "HERALD_LEASE=5m") // far beyond the test: the restart must take the recovery over
	const n = 12
	p, rcv, hookID, since := suspend(t, env, token, 4, n-4)
	before := rcv.Count()
	// The receiver holds every request until the process is dead.
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(204)
	})
	var rec recoveryView
	call(t, p.url, token, "POST", "/v3/webhooks/"+hookID+"/recover", map[string]any{"since": since.Format(time.RFC3339Nano)}, &rec)
	if rec.Count != n {
		t.Fatalf("recovery over %d; want %d", rec.Count, n)
	}
	heraldtest.Eventually(t, 30*time.Second, "the first batch in flight", func() bool { return rcv.Count()-before >= 2 })
	addr := strings.TrimPrefix(p.url, "http://")
	p.stop(t, syscall.SIGKILL)
	inFlight := rcv.Count() - before

	rcv.Status(204, "")
	once.Do(func() { close(release) })
	p = startServe(t, env, addr)
	heraldtest.Eventually(t, time.Minute, "the recovery done after the restart", func() bool {
		call(t, p.url, token, "GET", "/v3/webhooks/"+hookID+"/recoveries/"+rec.ID, nil, &rec)
		return rec.Status == "done"
	})
	got := rcv.byEvent(t, before)
	for id, times := range got {
		if times != 1 {
			t.Errorf("event %s received %d times; want once", id, times)
		}
	}
	if len(got) != n {
		t.Errorf("%d of %d missed events received", len(got), n)
	}
	// The resends in flight at the kill are counted failed (their answers
	// never came back) and left undelivered; the rest succeeded.
	if rec.Sent != n-inFlight || rec.Succeeded != n-inFlight || rec.Failed != inFlight || rec.Count != n {
		t.Errorf("recovery %+v; want %d sent and succeeded, %d failed (in flight at the kill)", rec, n-inFlight, inFlight)
	}
	succeeded := 0
	for _, l := range webhookLogs(t, p.url, token, hookID) {
		resends := 0
		for _, a := range l.Attempts {
			if a.Trigger == "resend" {
				resends++
			}
		}
		if resends > 1 {
			t.Errorf("log %s has %d resends", l.ID, resends)
		}
		if l.Status == "succeeded" {
			succeeded++
		}
	}
	if succeeded != n-inFlight {
		t.Errorf("%d logs succeeded; want %d", succeeded, n-inFlight)
	}
	t.Logf("killed with %d resends in flight; %d resent after the restart", inFlight, n-inFlight)
}
