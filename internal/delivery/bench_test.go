package delivery_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// benchStore opens a fresh store of the engine at dbURL with one account and
// `hooks` webhooks subscribed to license.created at url.
func benchStore(b *testing.B, dbURL string, hooks int, url string) (*store.Store, string) {
	b.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), dbURL, store.Options{Key: key})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	acct, err := st.CreateAccount(context.Background(), store.Bootstrap{AccountName: "bench", OwnerEmail: "b@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range hooks {
		if _, err := st.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{
			Name: fmt.Sprint("hook ", i), URL: url, Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_benchmark_token_0123456789",
		}); err != nil {
			b.Fatal(err)
		}
	}
	return st, acct.ID
}

var sampleData = event.Sample(event.LicenseCreated, time.Now())

// fire writes n events in transactions of up to 500, as a bulk import would.
func fire(b *testing.B, st *store.Store, accountID string, n int) {
	b.Helper()
	for n > 0 {
		k := min(n, 500)
		err := st.InTx(context.Background(), func(tx *store.Tx) error {
			for range k {
				if _, err := tx.Fire(context.Background(), accountID, event.LicenseCreated, sampleData); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// BenchmarkFire measures writing events with their logs (the outbox), 500
// events a transaction, one webhook subscribed.
func BenchmarkFire(b *testing.B) {
	for _, e := range testdb.BenchStores() {
		b.Run(e.Name, func(b *testing.B) {
			st, acct := benchStore(b, e.URL(b), 1, "http://127.0.0.1:1/")
			b.ResetTimer()
			fire(b, st, acct, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkDeliver measures the dispatcher end to end: claim, sign, POST to a
// loopback receiver answering 204, record, for b.N (event, webhook)
// deliveries already queued. One process; the receiver shares its two cores.
func BenchmarkDeliver(b *testing.B) {
	for _, e := range testdb.BenchStores() {
		for _, hooks := range []int{1, 5} {
			b.Run(fmt.Sprintf("%s/webhooks=%d", e.Name, hooks), func(b *testing.B) {
				rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.WriteHeader(http.StatusNoContent)
				}))
				b.Cleanup(rcv.Close)
				st, acct := benchStore(b, e.URL(b), hooks, rcv.URL)
				events := max(b.N/hooks, 1)
				fire(b, st, acct, events)
				total := events * hooks
				d := delivery.New(queue.New(st).ForDelivery(), delivery.Config{AttemptTimeout: 10 * time.Second})
				ctx, cancel := context.WithCancel(context.Background())
				b.ResetTimer()
				done := make(chan struct{})
				go func() { d.Run(ctx); close(done) }()
				for {
					var n int
					// Counts through the partial index of waiting logs.
					if err := st.QueryRow(context.Background(), `SELECT COUNT(*) FROM webhook_event_logs WHERE status IN ('queued', 'retrying', 'pending')`).Scan(&n); err != nil {
						b.Fatal(err)
					}
					if n == 0 {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				b.StopTimer()
				cancel()
				<-done
				b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "deliveries/s")
			})
		}
	}
}

// BenchmarkRecord measures recording outcomes alone (Store.Complete in
// batches of 200 delivered attempts, as the recorder writes them), with and
// without the headers each attempt keeps: what keeping them costs the
// recorder, apart from the network and the receiver.
func BenchmarkRecord(b *testing.B) {
	sent := attempt.HeaderLines(http.Header{
		"Content-Type": {"application/json; charset=utf-8"}, "Content-Length": {"214"}, "User-Agent": {"herald/1.0.0"},
		"webhook-signature": {"6P7jSxkBv1dzlVZmq3fWz0Qe0WvKk2pX3s4Yp0Rk8aA="}, "webhook-id": {"01936f0e-8c41-7e2a-9d55-4a4a1c0e7b21"},
	})
	answered := attempt.HeaderLines(http.Header{"Content-Length": {"0"}, "Date": {"Sat, 21 Nov 2026 08:07:13 GMT"}, "Server": {"nginx"}})
	for _, e := range testdb.BenchStores() {
		for _, withHeaders := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/headers=%v", e.Name, withHeaders), func(b *testing.B) {
				st, acct := benchStore(b, e.URL(b), 1, "http://127.0.0.1:1/")
				fire(b, st, acct, b.N)
				ctx := context.Background()
				now := time.Now()
				claims, err := queue.New(st).Claim(ctx, attempt.ClaimParams{Now: now, LeaseUntil: now.Add(time.Hour), Lease: store.NewID(), Limit: b.N, PerWebhook: b.N})
				if err != nil || len(claims) != b.N {
					b.Fatalf("claimed %d of %d: %v", len(claims), b.N, err)
				}
				code := 204
				outs := make([]attempt.Outcome, len(claims))
				for i, c := range claims {
					a := &attempt.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code, Duration: time.Millisecond}
					if withHeaders {
						a.Headers = &attempt.AttemptHeaders{Request: sent, Response: answered}
					}
					outs[i] = attempt.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: attempt.TriggerAutomatic, Result: attempt.Delivered, Attempt: a}
				}
				b.ResetTimer()
				for len(outs) > 0 {
					n := min(len(outs), 200)
					if _, err := queue.New(st).Complete(ctx, outs[:n], 50); err != nil {
						b.Fatal(err)
					}
					outs = outs[n:]
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "attempts/s")
			})
		}
	}
}
