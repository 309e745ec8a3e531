package storetest

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// undelivered fires events at a webhook w and completes them so that w
// ends Suspended with failed logs failed (all attempts used) and then
// cancelled ones cancelled (fired while suspended); a disabled webhook d
// gets the same events, cancelled as disabled, and one event is delivered
// first. It returns w, d and the failed and cancelled log ids of w.
func (b *Bundle) undelivered(t *testing.T, failed, cancelled int) (w, d store.Webhook, failedIDs, cancelledIDs []string) {
	t.Helper()
	w = b.Webhook(t, "w")
	d = b.Webhook(t, "d")
	off := false
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, d.ID, store.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	b.Fire(t, b.St, failed+1)
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if len(c) != failed+1 {
		t.Fatalf("claimed %d; want %d", len(c), failed+1)
	}
	now := b.Clock.Now()
	b.Complete(t, b.St, failed, Outcome(c[0], store.Delivered, 200, now))
	for _, x := range c[1:] {
		b.Complete(t, b.St, failed, Outcome(x, store.Exhausted, 500, now))
		failedIDs = append(failedIDs, x.LogID)
	}
	if h, _ := b.health(t, w.ID); h != store.Suspended {
		t.Fatalf("webhook %s; want Suspended", h)
	}
	b.Clock.Add(time.Second)
	b.Fire(t, b.St, cancelled)
	for _, l := range b.logs(t, store.LogFilter{WebhookID: w.ID, Status: store.Cancelled}) {
		cancelledIDs = append(cancelledIDs, l.ID)
	}
	if len(cancelledIDs) != cancelled {
		t.Fatalf("%d cancelled logs; want %d", len(cancelledIDs), cancelled)
	}
	return w, d, failedIDs, cancelledIDs
}

// resent is a recovery's outcome for one of its logs.
func resent(c store.Claim, recovery string, ok bool, at time.Time) store.Outcome {
	o := Outcome(c, store.Delivered, 200, at)
	o.Trigger, o.Recovery, o.Lease = store.TriggerResend, recovery, ""
	if !ok {
		o = Outcome(c, store.Delivered, 503, at)
		o.Trigger, o.Recovery, o.Lease, o.Result = store.TriggerResend, recovery, "", store.ResendFailed
	}
	return o
}

func testRecoveryChoosesItsLogs(t *testing.T, b *Bundle) {
	w, d, failed, cancelled := b.undelivered(t, 3, 2)
	mid := b.log(t, cancelled[0]).CreatedAt
	for _, tt := range []struct {
		name string
		f    queue.RecoveryFilter
		want int
	}{
		{"both statuses by default", queue.RecoveryFilter{}, 5},
		{"failed only", queue.RecoveryFilter{Statuses: []store.LogStatus{store.Failed}}, 3},
		{"cancelled only, never the disabled webhook's", queue.RecoveryFilter{Statuses: []store.LogStatus{store.Cancelled}}, 2},
		{"since", queue.RecoveryFilter{Since: mid}, 2},
		{"until", queue.RecoveryFilter{Until: mid}, 3},
		{"an empty range", queue.RecoveryFilter{Since: mid.Add(time.Hour)}, 0},
	} {
		n, err := b.Q.CountRecoverable(b.Ctx, b.Account.ID, w.ID, tt.f)
		if err != nil || n != tt.want {
			t.Errorf("%s: counted %d, %v; want %d", tt.name, n, err, tt.want)
		}
	}
	if n, err := b.Q.CountRecoverable(b.Ctx, b.Account.ID, d.ID, queue.RecoveryFilter{}); err != nil || n != 0 {
		t.Errorf("disabled webhook's cancelled logs counted %d, %v; want 0", n, err)
	}
	other := b.NewAccount(t, "other@example.com")
	if _, err := b.Q.CountRecoverable(b.Ctx, other.ID, w.ID, queue.RecoveryFilter{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's count: %v; want ErrNotFound", err)
	}
	if _, err := b.Q.StartRecovery(b.Ctx, other.ID, w.ID, queue.RecoveryFilter{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's recovery: %v; want ErrNotFound", err)
	}
	if _, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, d.ID, queue.RecoveryFilter{}); !errors.Is(err, queue.ErrWebhookDisabled) {
		t.Errorf("recovery of a disabled webhook: %v; want ErrWebhookDisabled", err)
	}
	// A dry run changed nothing: every log is as it was.
	for _, id := range append(failed, cancelled...) {
		if l := b.log(t, id); len(l.Attempts) > 1 || (l.Status != store.Failed && l.Status != store.Cancelled) {
			t.Fatalf("log %s changed: %s, %d attempts", id, l.Status, len(l.Attempts))
		}
	}
	empty, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{Since: mid.Add(time.Hour)})
	if err != nil || empty.Status != store.RecoveryDone || empty.Count != 0 || empty.FinishedAt == nil {
		t.Fatalf("empty recovery %+v, %v; want done at once", empty, err)
	}
	r, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil || r.Count != 5 || r.Status != store.RecoveryRunning {
		t.Fatalf("recovery %+v, %v; want running over 5", r, err)
	}
	if _, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{}); !errors.Is(err, queue.ErrRecoveryRunning) {
		t.Errorf("second recovery while one runs: %v; want ErrRecoveryRunning", err)
	}
	list, _, err := b.Q.Recoveries(b.Ctx, b.Account.ID, w.ID, store.Page{Limit: 10})
	if err != nil || len(list) != 2 || list[0].ID != r.ID || list[1].ID != empty.ID {
		t.Errorf("recoveries %+v, %v; want the running one, then the empty one", list, err)
	}
	if _, _, err := b.Q.Recoveries(b.Ctx, other.ID, w.ID, store.Page{Limit: 10}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's list: %v; want ErrNotFound", err)
	}
	if _, err := b.Q.Recovery(b.Ctx, other.ID, w.ID, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's recovery: %v; want ErrNotFound", err)
	}
	if _, err := b.Q.CancelRecovery(b.Ctx, other.ID, w.ID, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's cancel: %v; want ErrNotFound", err)
	}
	got, err := b.Q.CancelRecovery(b.Ctx, b.Account.ID, w.ID, r.ID)
	if err != nil || got.Status != store.RecoveryCancelled || got.FinishedAt == nil {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	if _, err := b.Q.CancelRecovery(b.Ctx, b.Account.ID, w.ID, r.ID); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second cancel: %v; want ErrConflict", err)
	}
	if _, ok, err := b.Q.AcquireRecovery(b.Ctx, store.NewID(), b.Clock.Now().Add(time.Minute)); err != nil || ok {
		t.Errorf("a cancelled recovery was acquired (%v, %v)", ok, err)
	}
}

// testRecoveryResendsEachLogOnce runs a recovery by hand as a process
// would, dies in the middle, and has another process finish it.
func testRecoveryResendsEachLogOnce(t *testing.T, b *Bundle) {
	w, _, failed, cancelled := b.undelivered(t, 3, 2)
	r, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Several processes look for work at once: one takes it.
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	leases := make([]string, len(handles))
	var took atomic.Int32
	var first string
	Parallel(len(handles), func(i int) {
		leases[i] = store.NewID()
		got, ok, err := queue.New(handles[i]).AcquireRecovery(b.Ctx, leases[i], b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Errorf("acquire: %v", err)
		}
		if ok {
			took.Add(1)
			if got.ID != r.ID {
				t.Errorf("acquired %s; want %s", got.ID, r.ID)
			}
			first = leases[i]
		}
	})
	if took.Load() != 1 {
		t.Fatalf("%d processes took the recovery; want 1", took.Load())
	}
	now := b.Clock.Now()
	batch, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, first, 2, now.Add(time.Minute))
	if err != nil || len(batch) != 2 {
		t.Fatalf("first batch: %d, %v; want 2", len(batch), err)
	}
	for _, c := range batch {
		var body []byte
		if err := b.St.QueryRow(b.Ctx, `SELECT e.body FROM events e JOIN webhook_event_logs l ON l.event_id = e.id WHERE l.id = ?`, c.LogID).Scan(&body); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, c.Body) || c.URL != w.URL || c.Token == "" {
			t.Fatalf("claim of log %s does not carry the stored bytes, URL and token", c.LogID)
		}
	}
	// Marked in flight: neither a resend nor a claim takes them meanwhile.
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, batch[0].LogID, now.Add(time.Minute)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("resend of a log a recovery is sending: %v; want ErrConflict", err)
	}
	b.Complete(t, b.St, 3, resent(batch[0], r.ID, false, now), resent(batch[1], r.ID, true, now))
	if h, _ := b.health(t, w.ID); h != store.Healthy {
		t.Errorf("after a 2xx of the recovery the webhook is %s; want Healthy", h)
	}
	// The process dies with one log marked sending.
	lost, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, first, 1, now.Add(time.Minute))
	if err != nil || len(lost) != 1 {
		t.Fatalf("second batch: %d, %v", len(lost), err)
	}
	if _, ok, _ := queue.New(handles[1]).AcquireRecovery(b.Ctx, store.NewID(), now.Add(time.Minute)); ok {
		t.Fatal("a recovery under a live lease was taken")
	}
	b.Clock.Add(2 * time.Minute)
	second := store.NewID()
	got, ok, err := queue.New(handles[1]).AcquireRecovery(b.Ctx, second, b.Clock.Now().Add(time.Minute))
	if err != nil || !ok || got.Failed != 2 || got.Sent != 2 || got.Succeeded != 1 {
		t.Fatalf("takeover: %+v, %v, %v; want sent 2, succeeded 1, failed 2 (one interrupted)", got, ok, err)
	}
	if _, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, first, 1, b.Clock.Now().Add(time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the dead lease asked for more: %v; want ErrLeaseLost", err)
	}
	// The interrupted log is not sent again; the rest are, once each.
	var rest []store.Claim
	for {
		batch, err := queue.New(handles[1]).NextRecoveryLogs(b.Ctx, r.ID, second, 10, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, c := range batch {
			if c.LogID == lost[0].LogID {
				t.Fatalf("interrupted log %s handed out again", c.LogID)
			}
			b.Complete(t, handles[1], 3, resent(c, r.ID, true, b.Clock.Now()))
		}
		rest = append(rest, batch...)
	}
	if len(rest) != 2 {
		t.Fatalf("%d logs resent after the takeover; want 2", len(rest))
	}
	done, err := b.Q.Recovery(b.Ctx, b.Account.ID, w.ID, r.ID)
	if err != nil || done.Status != store.RecoveryDone || done.Count != 5 || done.Sent != 4 || done.Succeeded != 3 || done.Failed != 2 || done.FinishedAt == nil {
		t.Fatalf("finished recovery %+v, %v", done, err)
	}
	resends := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts a JOIN webhook_event_logs l ON l.id = a.log_id
WHERE l.webhook_id = ? AND a.trigger = 'resend'`, w.ID)
	if resends != 4 {
		t.Errorf("%d resend attempts recorded; want 4", resends)
	}
	for _, id := range append(failed, cancelled...) {
		if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts WHERE log_id = ? AND trigger = 'resend'`, id); n > 1 {
			t.Errorf("log %s resent %d times", id, n)
		}
	}
	// A new recovery covers what is still undelivered: the failed resend
	// and the interrupted one.
	if n, err := b.Q.CountRecoverable(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{}); err != nil || n != 2 {
		t.Errorf("left undelivered %d, %v; want 2", n, err)
	}
}

// testRecoveryStopsWhenDisabled: a stopping process
// gives its unsent logs back; disabling the webhook cancels the recovery.
func testRecoveryStopsWhenDisabled(t *testing.T, b *Bundle) {
	w, _, _, _ := b.undelivered(t, 2, 2)
	r, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	lease := store.NewID()
	if _, ok, err := b.Q.AcquireRecovery(b.Ctx, lease, b.Clock.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	batch, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, lease, 3, b.Clock.Now().Add(time.Minute))
	if err != nil || len(batch) != 3 {
		t.Fatalf("batch %d, %v", len(batch), err)
	}
	if err := b.Q.ReturnRecoveryLogs(b.Ctx, r.ID, []string{batch[2].LogID}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, batch[2].LogID, b.Clock.Now().Add(time.Minute)); err != nil {
		t.Errorf("a log given back is still marked in flight: %v", err)
	} else if err := b.Q.EndResend(b.Ctx, batch[2].LogID); err != nil {
		t.Fatal(err)
	}
	b.Complete(t, b.St, 2, resent(batch[0], r.ID, true, b.Clock.Now()), resent(batch[1], r.ID, true, b.Clock.Now()))
	if err := b.Q.ReleaseRecovery(b.Ctx, r.ID, lease); err != nil {
		t.Fatal(err)
	}
	next := store.NewID()
	if got, ok, err := b.Q.AcquireRecovery(b.Ctx, next, b.Clock.Now().Add(time.Minute)); !ok || err != nil || got.Failed != 0 {
		t.Fatalf("after a release: %+v, %v, %v; want taken at once, nothing interrupted", got, ok, err)
	}
	off := false
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if batch, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, next, 3, b.Clock.Now().Add(time.Minute)); err != nil || len(batch) != 0 {
		t.Fatalf("disabled webhook's recovery handed out %d, %v", len(batch), err)
	}
	got, err := b.Q.Recovery(b.Ctx, b.Account.ID, w.ID, r.ID)
	if err != nil || got.Status != store.RecoveryCancelled || got.Sent != 2 {
		t.Fatalf("recovery of a disabled webhook %+v, %v; want cancelled after 2", got, err)
	}
	// Deleting a webhook ends its running recovery with it.
	on := true
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	again, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil || again.Count != 2 {
		t.Fatalf("second recovery %+v, %v; want the 2 logs left", again, err)
	}
	lease = store.NewID()
	if _, ok, err := b.Q.AcquireRecovery(b.Ctx, lease, b.Clock.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if err := b.St.DeleteWebhook(b.Ctx, b.Account.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Q.NextRecoveryLogs(b.Ctx, again.ID, lease, 3, b.Clock.Now().Add(time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("recovery of a deleted webhook: %v; want ErrLeaseLost", err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM recoveries WHERE webhook_id = ?`, w.ID); n != 0 {
		t.Errorf("%d recoveries left of a deleted webhook", n)
	}
}

// testUndeliveredCount: a webhook counts its failed and suspended-cancelled
// logs since it last left Healthy, and a log list takes several statuses.
func testUndeliveredCount(t *testing.T, b *Bundle) {
	w, d, failed, _ := b.undelivered(t, 3, 2)
	undelivered := func(id string) int {
		t.Helper()
		hook, err := b.St.Webhook(b.Ctx, b.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		list, _, err := b.St.Webhooks(b.Ctx, b.Account.ID, store.WebhookFilter{Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range list {
			if h.ID == id && h.UndeliveredCount != hook.UndeliveredCount {
				t.Fatalf("list says %d undelivered, the webhook %d", h.UndeliveredCount, hook.UndeliveredCount)
			}
		}
		return hook.UndeliveredCount
	}
	if n := undelivered(w.ID); n != 5 {
		t.Errorf("suspended webhook: %d undelivered; want 5 (3 failed, 2 cancelled while suspended)", n)
	}
	hook, _ := b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if hook.LeftHealthyAt == nil {
		t.Fatal("a suspended webhook has no LeftHealthyAt")
	}
	if n, err := b.Q.CountRecoverable(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt}); err != nil || n != 5 {
		t.Errorf("recoverable since it left Healthy: %d, %v; want 5, its undelivered count", n, err)
	}
	if n := undelivered(d.ID); n != 0 {
		t.Errorf("disabled webhook: %d undelivered; want 0 (its cancelled logs were never due)", n)
	}
	for _, tt := range []struct {
		statuses []store.LogStatus
		want     int
	}{
		{[]store.LogStatus{store.Failed, store.Cancelled}, 5},
		{[]store.LogStatus{store.Failed, store.Succeeded}, 4},
		{[]store.LogStatus{store.Failed}, 3},
		{[]store.LogStatus{store.Queued}, 0},
	} {
		if got := b.logs(t, store.LogFilter{WebhookID: w.ID, Statuses: tt.statuses}); len(got) != tt.want {
			t.Errorf("logs with status in %v: %d; want %d", tt.statuses, len(got), tt.want)
		}
	}
	// A list of failed logs reads the undelivered ones (decision 0096):
	// every failed log must be among them, a log cancelled because its
	// webhook was disabled (never undelivered) that a resend then failed
	// included.
	cancelledOfDisabled := b.logs(t, store.LogFilter{WebhookID: d.ID})
	b.Complete(t, b.St, 3, resent(store.Claim{LogID: cancelledOfDisabled[0].ID, WebhookID: d.ID}, "", false, b.Clock.Now()))
	for _, tt := range []struct {
		name string
		f    store.LogFilter
		want int
	}{
		{"the disabled webhook's", store.LogFilter{WebhookID: d.ID, Status: store.Failed}, 1},
		{"the suspended webhook's", store.LogFilter{WebhookID: w.ID, Status: store.Failed}, 3},
		{"the account's", store.LogFilter{Status: store.Failed}, 4},
		{"the account's, as a list of one", store.LogFilter{Statuses: []store.LogStatus{store.Failed}}, 4},
	} {
		if got := b.logs(t, tt.f); len(got) != tt.want {
			t.Errorf("%s failed logs: %d listed; want %d", tt.name, len(got), tt.want)
		}
		if n, _, err := b.St.CountLogs(b.Ctx, b.Account.ID, tt.f, 100); err != nil || n != tt.want {
			t.Errorf("%s failed logs: %d counted, %v; want %d", tt.name, n, err, tt.want)
		}
	}
	// A 2xx makes it Healthy, with nothing undelivered since.
	b.Complete(t, b.St, 3, resent(store.Claim{LogID: failed[0], WebhookID: w.ID}, "", true, b.Clock.Now()))
	if n := undelivered(w.ID); n != 0 {
		t.Errorf("healthy again: %d undelivered; want 0", n)
	}
	// The next event that fails counts alone: the ones before are older.
	b.Clock.Add(time.Minute)
	b.Fire(t, b.St, 1)
	c := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(c) != 1 {
		t.Fatalf("claimed %d; want 1", len(c))
	}
	b.Complete(t, b.St, 3, Outcome(c[0], store.Exhausted, 500, b.Clock.Now()))
	if h, _ := b.health(t, w.ID); h != store.Unhealthy {
		t.Fatalf("webhook %s; want Unhealthy", h)
	}
	if n := undelivered(w.ID); n != 1 {
		t.Errorf("unhealthy again: %d undelivered; want 1", n)
	}
	hook, _ = b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if n, err := b.Q.CountRecoverable(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{CompletedSince: *hook.LeftHealthyAt}); err != nil || n != 1 {
		t.Errorf("recoverable since it left Healthy again: %d, %v; want 1", n, err)
	}
}

// testRecoverySkipsLogsDeliveredMeanwhile: a log resent by hand after the
// recovery started is not sent again by it.
func testRecoverySkipsLogsDeliveredMeanwhile(t *testing.T, b *Bundle) {
	w, _, failed, _ := b.undelivered(t, 2, 1)
	r, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil || r.Count != 3 {
		t.Fatalf("recovery %+v, %v; want 3 logs", r, err)
	}
	b.Complete(t, b.St, 2, resent(store.Claim{LogID: failed[0], WebhookID: w.ID}, "", true, b.Clock.Now()))
	lease := store.NewID()
	if _, ok, err := b.Q.AcquireRecovery(b.Ctx, lease, b.Clock.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	var sent []string
	for {
		batch, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, lease, 10, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, c := range batch {
			sent = append(sent, c.LogID)
			b.Complete(t, b.St, 2, resent(c, r.ID, true, b.Clock.Now()))
		}
	}
	for _, id := range sent {
		if id == failed[0] {
			t.Errorf("log %s, delivered by hand meanwhile, was handed out again", id)
		}
	}
	done, err := b.Q.Recovery(b.Ctx, b.Account.ID, w.ID, r.ID)
	if err != nil || len(sent) != 2 || done.Status != store.RecoveryDone || done.Sent != 2 || done.Count != 3 {
		t.Errorf("sent %d; recovery %+v, %v; want 2 sent of 3, done", len(sent), done, err)
	}
}

// testRecoveryTakesEventsOldestFirst: a recovery's batches come in the
// events' order, oldest first (docs/recovery.md promises it), failed and
// cancelled logs mixed as their events came.
func testRecoveryTakesEventsOldestFirst(t *testing.T, b *Bundle) {
	w, _, _, _ := b.undelivered(t, 4, 3)
	r, err := b.Q.StartRecovery(b.Ctx, b.Account.ID, w.ID, queue.RecoveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	lease := store.NewID()
	if _, ok, err := b.Q.AcquireRecovery(b.Ctx, lease, b.Clock.Now().Add(time.Minute)); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	var got []int64
	for {
		batch, err := b.Q.NextRecoveryLogs(b.Ctx, r.ID, lease, 2, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		var out []store.Outcome
		for _, c := range batch {
			var created int64
			if err := b.St.QueryRow(b.Ctx, `SELECT triggered_at FROM events WHERE id = ?`, c.EventID).Scan(&created); err != nil {
				t.Fatal(err)
			}
			got = append(got, created)
			out = append(out, resent(c, r.ID, false, b.Clock.Now()))
		}
		b.Complete(t, b.St, 4, out...)
	}
	if len(got) != 7 {
		t.Fatalf("resent %d logs; want 7", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("events resent in the order of their times %v; want oldest first", got)
		}
	}
}
