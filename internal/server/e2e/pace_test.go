package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// A process short of CPU (decision 0115) holds a client's next change while
// what its changes fired waits in the queue for a webhook that answers
// promptly, and lets it go once the claims have taken it; another
// account's change goes ahead meanwhile. Every delivery is made once.
func TestAClientWaitsWhileWhatItFiredWaitsForTheProcess(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			o := heraldtest.Options{Delivery: delivery.Config{PerWebhook: 2, BatchSize: 1, AttemptTimeout: time.Minute,
				Busy: func() bool { return true }, PaceWait: 2 * time.Minute}}
			if engine == "postgres" {
				o.DatabaseURL = heraldtest.PostgresURL(t)
			}
			h := heraldtest.Start(t, o)
			rcv := heraldtest.NewReceiver(t)
			hold := make(chan struct{})
			release := sync.OnceFunc(func() { close(hold) })
			t.Cleanup(release) // before the receiver closes, which waits for held requests
			rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
				var body bytes.Buffer
				body.ReadFrom(r.Body)
				if bytes.Contains(body.Bytes(), []byte(`"hold":true`)) {
					<-hold
				}
				w.WriteHeader(http.StatusNoContent)
			})
			h.CreateWebhook("w", rcv.URL, "license.created")
			product, err := h.API.CreateProduct(context.Background(), "paced", nil)
			if err != nil {
				t.Fatal(err)
			}
			create := func(h *heraldtest.Herald, productID string, meta map[string]any) error {
				_, err := h.API.CreateLicense(context.Background(), client.LicenseCreate{ProductID: productID, Metadata: meta})
				return err
			}

			// One request held, one answered promptly beside it: the
			// webhook is known to answer promptly.
			if err := create(h, product.ID, map[string]any{"hold": true}); err != nil {
				t.Fatal(err)
			}
			if err := create(h, product.ID, nil); err != nil {
				t.Fatal(err)
			}
			heraldtest.Eventually(t, 10*time.Second, "both requests in", func() bool { return rcv.Count() == 2 })

			// Held requests fill the webhook's room (2 in flight, 2 more
			// waiting for them); the rest wait in the queue, the first
			// within the account's credit (a batch of 1), the second
			// owed: the change after it waits.
			const fired = 12
			done := make(chan error, 1)
			go func() {
				for range fired {
					if err := create(h, product.ID, map[string]any{"hold": true}); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			heraldtest.Eventually(t, 30*time.Second, "a change waiting for the deliveries",
				func() bool { return metric(t, h, "herald_delivery_pace_waiting") == 1 })
			select {
			case err := <-done:
				t.Fatalf("all %d changes made (%v) while the deliveries they fired waited in the queue", fired, err)
			default:
			}

			// Another account fires nothing waiting: it goes ahead.
			other := h.NewAccount("Other", "other@example.com")
			p2, err := other.API.CreateProduct(context.Background(), "other", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := create(other, p2.ID, nil); err != nil {
				t.Fatal(err)
			}

			release()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the changes still wait a minute after their deliveries were let go")
			}
			heraldtest.Eventually(t, 30*time.Second, "every delivery", func() bool { return rcv.Count() >= fired+2 })
			h.Settled()
			seen := map[string]int{}
			for _, r := range rcv.Requests() {
				seen[r.Header.Get("webhook-id")]++
			}
			if len(seen) != fired+2 || rcv.Count() != fired+2 {
				t.Fatalf("%d requests for %d distinct deliveries; want %d, each once", rcv.Count(), len(seen), fired+2)
			}
			if n := metric(t, h, "herald_delivery_pace_wait_seconds_count"); n < 1 {
				t.Fatalf("%v changes counted as waited; want at least 1", n)
			}
		})
	}
}
