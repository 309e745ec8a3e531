package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
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
//
// With handed=true the firing hands its logs over (decision 0105), as a
// herald on PostgreSQL does while its dispatcher has room: no claim.
func BenchmarkDeliveryWAL(b *testing.B) {
	for _, handed := range []bool{false, true} {
		for _, hooks := range []int{1, 10} {
			b.Run(fmt.Sprintf("handed=%v/webhooks=%d", handed, hooks), func(b *testing.B) {
				benchmarkDeliveryWAL(b, hooks, handed)
			})
		}
	}
}

func benchmarkDeliveryWAL(b *testing.B, hooks int, handed bool) {
	w := storetest.NewWALBench(b, hooks)
	st, acct, ctx := w.St, w.Acct, context.Background()
	h := &storetest.Handoffs{}
	if handed {
		st.SetHandoff(h)
	}
	code := 200
	var perDelivery []float64
	b.ResetTimer()
	for range b.N {
		before := w.LSN()
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic", "key": "ABCD-EFGH-IJKL-MNOP"})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		var claims []store.Claim
		var err error
		if handed {
			claims, h.Taken = h.Taken, nil
		} else {
			claims, err = queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 100, PerWebhook: 100})
		}
		if err != nil || len(claims) != hooks {
			b.Fatalf("claimed or handed over %d logs, %v; want %d", len(claims), err, hooks)
		}
		outs := make([]store.Outcome, 0, len(claims))
		for _, c := range claims {
			outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
				Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code, ResponseBody: []byte("ok")}})
		}
		if _, err := queue.New(st).Complete(ctx, outs, 50); err != nil {
			b.Fatal(err)
		}
		perDelivery = append(perDelivery, float64(w.LSN()-before)/float64(hooks))
	}
	b.StopTimer()
	var sum float64
	for _, v := range perDelivery {
		sum += v
	}
	b.ReportMetric(sum/float64(len(perDelivery)), "WAL-B/delivery")
	b.ReportMetric(slices.Min(perDelivery), "least-WAL-B/delivery")
}
