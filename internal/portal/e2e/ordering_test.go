package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestWebhookFormOrderingAndSkip: the form takes an order and what a
// failure does, refuses an unknown one beside the field (saving nothing);
// a failed event of a webhook in order that holds shows that it holds
// back its license, and is skipped from its page, once.
func TestWebhookFormOrderingAndSkip(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(500, "down")
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"Mirror"}, "url": {rcv.URL}, "events": {"license.created"}, "enabled": {"on"},
		"ordering": {"account"}, "orderingOnFailure": {"hold"}, "retryPolicy.maxAttempts": {"1"}}
	if code, _, body := b.submit("/webhooks/new", form); code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="ordering-error"`) {
		t.Fatalf("ordering account: %d; want 422 beside the field\n%s", code, body)
	}
	var list struct{ Data []struct{ ID string } }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("a refused form created %d webhooks", len(list.Data))
	}
	form.Set("ordering", "license")
	code, loc, _ := b.submit("/webhooks/new", form)
	if code != http.StatusOK {
		t.Fatalf("add: %d", code)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	var got struct{ Ordering, OrderingOnFailure string }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &got)
	if got.Ordering != "license" || got.OrderingOnFailure != "hold" {
		t.Fatalf("webhook ordering %q on failure %q; want license, hold", got.Ordering, got.OrderingOnFailure)
	}
	if _, _, body := b.get("/webhooks/" + id + "/edit"); !strings.Contains(body, `<option value="license" selected>`) {
		t.Errorf("the edit form does not show the chosen order")
	}
	h.CreateLicense(nil)
	var failed []heraldtest.Log
	heraldtest.Eventually(t, 30*time.Second, "the failed log", func() bool {
		failed = h.Logs("webhookId=" + id + "&status=failed")
		return len(failed) == 1
	})
	page := "/webhook-event-logs/" + failed[0].ID
	if _, _, body := b.get(page); !strings.Contains(body, `id="held"`) || !strings.Contains(body, "Skip it") {
		t.Fatalf("the failed log's page does not say it holds its license back:\n%s", body)
	}
	if _, _, body := b.get("/webhooks/" + id); !strings.Contains(body, `class="badge holding"`) {
		t.Errorf("the webhook's log list does not mark the holding log:\n%s", body)
	}
	if code, _, body := b.submit(page+"/skip", url.Values{}); code != http.StatusOK || strings.Contains(body, `id="held"`) {
		t.Fatalf("skip: %d; want the log's page, holding nothing\n%s", code, body)
	}
	if _, _, body := b.get("/webhooks/" + id); strings.Contains(body, `class="badge holding"`) {
		t.Errorf("the webhook's log list still marks the skipped log holding")
	}
	if code, _, body := b.submit(page+"/skip", url.Values{}); code != http.StatusConflict || !strings.Contains(body, "nothing to skip") {
		t.Fatalf("skip again: %d; want 409 saying there is nothing to skip\n%s", code, body)
	}
}
