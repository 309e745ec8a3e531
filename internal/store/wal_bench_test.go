package store_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// BenchmarkDeliveryWAL measures the WAL PostgreSQL writes for one delivery
// when nothing is shared: each op fires one event, claims its logs and
// records their outcomes in a batch, each step its own commit, to one
// webhook or to ten. It reports the bytes per delivery, the mean and the
// least of the ops (the least is the delivery's own: the server is shared,
// and anything else written meanwhile adds to a mean), read from
// pg_current_wal_insert_lsn() before and after each op. The queue's vacuum
// is left out (herald runs it by churn, not per delivery).
//
//	HERALD_TEST_POSTGRES_URL=… go test -run '^$' -bench DeliveryWAL ./internal/store/
func BenchmarkDeliveryWAL(b *testing.B) {
	for _, hooks := range []int{1, 10} {
		b.Run(fmt.Sprintf("webhooks=%d", hooks), func(b *testing.B) {
			url := heraldtest.PostgresURL(b)
			ctx := context.Background()
			key := make([]byte, 32)
			rand.Read(key)
			st, err := store.Open(ctx, url, store.Options{Key: key})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()})
			if err != nil {
				b.Fatal(err)
			}
			byHook := map[string]string{}
			for i := range hooks {
				hook, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: fmt.Sprint("h", i), URL: fmt.Sprintf("https://example.com/h%d", i),
					Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
				if err != nil {
					b.Fatal(err)
				}
				byHook[hook.ID] = hook.ID
			}
			lsn := func() int64 {
				var n int64
				if err := st.QueryRow(ctx, `SELECT CAST(pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS BIGINT)`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				return n
			}
			code := 200
			var perDelivery []float64
			b.ResetTimer()
			for range b.N {
				before := lsn()
				if err := st.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic", "key": "ABCD-EFGH-IJKL-MNOP"})
					return err
				}); err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				claims, err := st.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 100, PerWebhook: 100})
				if err != nil || len(claims) != hooks {
					b.Fatalf("claimed %d logs, %v; want %d", len(claims), err, hooks)
				}
				outs := make([]store.Outcome, 0, len(claims))
				for _, c := range claims {
					outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: byHook[c.WebhookID], Lease: c.Lease, Trigger: store.TriggerAutomatic,
						Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code, ResponseBody: []byte("ok")}})
				}
				if _, err := st.Complete(ctx, outs, 50); err != nil {
					b.Fatal(err)
				}
				perDelivery = append(perDelivery, float64(lsn()-before)/float64(hooks))
			}
			b.StopTimer()
			var sum float64
			for _, v := range perDelivery {
				sum += v
			}
			b.ReportMetric(sum/float64(len(perDelivery)), "WAL-B/delivery")
			b.ReportMetric(slices.Min(perDelivery), "least-WAL-B/delivery")
		})
	}
}
