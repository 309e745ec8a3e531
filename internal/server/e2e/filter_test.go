package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestFilterChoosesDeliveries: a webhook with a filter gets the events whose
// payload passes it and no log at all of the others; a malformed filter is
// refused naming the path and the operator, and changes nothing;
// filter-test explains a match.
func TestFilterChoosesDeliveries(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		ctx := context.Background()
		proRcv, allRcv := heraldtest.NewReceiver(t), heraldtest.NewReceiver(t)
		pro, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "pro CRM", URL: proRcv.URL, Events: []string{"license.created"},
			Filter: json.RawMessage(`{"data.metadata.plan": {"$in": ["pro", "team"]}, "event": {"$prefix": "license."}}`)})
		if err != nil {
			t.Fatal(err)
		}
		if !pro.HasFilter() {
			t.Fatalf("created webhook shows no filter: %s", pro.Filter)
		}
		all := h.CreateWebhook("all", allRcv.URL, "license.created")

		// Malformed: 422 naming the field, the path and the operator; the
		// webhook keeps its filter.
		bad := json.RawMessage(`{"data.metadata.plan": {"$in": "pro"}}`)
		_, err = h.API.UpdateWebhook(ctx, pro.ID, client.WebhookUpdate{Filter: &bad})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != 422 || len(ce.Errors) != 1 || ce.Errors[0].Field != "filter" ||
			!strings.Contains(ce.Errors[0].Detail, `"data.metadata.plan"`) || !strings.Contains(ce.Errors[0].Detail, "$in") {
			t.Fatalf("bad filter answered %v; want 422 on filter naming the path and $in", err)
		}
		if w, err := h.API.Webhook(ctx, pro.ID); err != nil || !strings.Contains(string(w.Filter), `"team"`) {
			t.Fatalf("after a refused update the filter is %s (%v); want it unchanged", w.Filter, err)
		}

		proLicense := h.CreateLicense(map[string]any{"plan": "pro"})
		h.CreateLicense(map[string]any{"plan": "basic"})
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "three deliveries to the unfiltered webhook", func() bool { return allRcv.Count() == 3 })
		heraldtest.Eventually(t, 10*time.Second, "one delivery to the filtered webhook", func() bool { return proRcv.Count() == 1 })
		h.Settled()
		if got := proRcv.Requests(); len(got) != 1 || !strings.Contains(string(got[0].Body), proLicense) {
			t.Fatalf("filtered webhook got %d deliveries; want the pro license's alone", len(got))
		}
		if logs := h.Logs("webhookId=" + pro.ID); len(logs) != 1 {
			t.Errorf("filtered webhook has %d logs; want 1 (events it filters out make none)", len(logs))
		}
		if logs := h.Logs("webhookId=" + all.ID); len(logs) != 3 {
			t.Errorf("unfiltered webhook has %d logs; want 3", len(logs))
		}

		// Removing the filter lets everything through again.
		if w, err := h.API.UpdateWebhook(ctx, pro.ID, client.WebhookUpdate{Filter: &client.NoFilter}); err != nil || w.HasFilter() {
			t.Fatalf("remove filter: %s, %v", w.Filter, err)
		}
		h.CreateLicense(map[string]any{"plan": "basic"})
		heraldtest.Eventually(t, 10*time.Second, "a delivery once the filter is gone", func() bool { return proRcv.Count() == 2 })

		// filter-test explains, and refuses as saving would.
		payload := json.RawMessage(proRcv.Requests()[0].Body)
		res, err := h.API.TestFilter(ctx, json.RawMessage(`{"data.metadata.plan": "basic"}`), payload)
		if err != nil || res.Matches || res.Explanation != `data.metadata.plan $eq "basic": fails (found "pro")` {
			t.Errorf("filter-test = %+v, %v; want no match, explained", res, err)
		}
		res, err = h.API.TestFilter(ctx, json.RawMessage(`{"$or": [{"data.metadata.plan": "basic"}, {"data.id": {"$exists": true}}]}`), payload)
		if err != nil || !res.Matches {
			t.Errorf("filter-test = %+v, %v; want a match", res, err)
		}
		_, err = h.API.TestFilter(ctx, json.RawMessage(`{"data.x": {"$regex": "a"}}`), payload)
		if !errors.As(err, &ce) || ce.Status != 422 || ce.Errors[0].Field != "filter" || !strings.Contains(ce.Errors[0].Detail, "$regex") {
			t.Errorf("filter-test with a bad operator answered %v; want 422 on filter naming $regex", err)
		}
	})
}
