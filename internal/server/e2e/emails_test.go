package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// Without an SMTP server herald keeps its emails; the account reads them
// with GET /v3/emails, newest first, each saying it was kept and why.
func TestKeptEmailsAreListed(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 1}})
		rcv := heraldtest.NewReceiver(t)
		rcv.Status(500, "")
		first := h.CreateWebhook("first", rcv.URL, "license.created")
		failEvents(t, h, first.ID, 1) // suspended: an email
		h.Must(200, "PATCH", "/v3/webhooks/"+first.ID, map[string]any{"enabled": false}, nil)
		hook := h.CreateWebhook("down", rcv.URL, "license.created")
		failEvents(t, h, hook.ID, 1) // and another
		type email struct {
			To, Subject, Body, Status, CreatedAt string
			Note, SentAt                         *string
		}
		var page struct {
			Data       []email
			NextCursor *string
		}
		heraldtest.Eventually(t, 30*time.Second, "two emails kept", func() bool {
			h.Must(200, "GET", "/v3/emails", nil, &page)
			return len(page.Data) == 2 && page.Data[0].Status == "kept" && page.Data[1].Status == "kept"
		})
		newest := page.Data[0]
		if !strings.Contains(newest.Subject, "suspended") || !strings.Contains(newest.Body, hook.ID) || newest.Note == nil ||
			!strings.Contains(*newest.Note, "no SMTP server") || newest.SentAt == nil || newest.To == "" {
			t.Errorf("newest email %+v; want the suspension, kept for want of an SMTP server", newest)
		}
		if !strings.Contains(page.Data[1].Subject, `"first"`) {
			t.Errorf("older email %q; want the first webhook's", page.Data[1].Subject)
		}
		h.Must(200, "GET", "/v3/emails?limit=1", nil, &page)
		if len(page.Data) != 1 || page.NextCursor == nil {
			t.Fatalf("a page of 1: %+v; want one and a cursor", page)
		}
		h.Must(200, "GET", "/v3/emails?limit=1&cursor="+*page.NextCursor, nil, &page)
		if len(page.Data) != 1 || page.NextCursor != nil {
			t.Errorf("the second page: %+v; want the last one", page)
		}
	})
}
