package licensing_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// BenchmarkFireDueExpiries measures the expiry runner's transaction: one
// op fires license.expired for a batch of licensing.ExpiryBatch licenses
// (claim, read, fire with a log each for one subscribed webhook, record),
// the licenses created through the API beforehand, their expiring-soon
// already fired. What it costs bounds how many expiries a second herald
// fires (scenario x of herald bench fires 10,000 a second).
func BenchmarkFireDueExpiries(b *testing.B) {
	for _, e := range testdb.BenchStores() {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			var mu sync.Mutex
			start := time.Now().UTC().Truncate(time.Second)
			clock := start
			key := make([]byte, 32)
			rand.Read(key)
			st, err := store.Open(ctx, e.URL(b), store.Options{Key: key, Now: func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				return clock
			}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "bench", OwnerEmail: "b@example.com", PasswordHash: "x", TokenHash: "x"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "hook", URL: "http://127.0.0.1:1/",
				Events: []event.Kind{event.LicenseExpired}, Enabled: true, Token: "whsec_benchmark_token_0123456789"}); err != nil {
				b.Fatal(err)
			}
			lic := licensing.New(st)
			name := "P"
			p, err := lic.CreateProduct(ctx, acct.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: &name}})
			if err != nil {
				b.Fatal(err)
			}
			n := b.N * licensing.ExpiryBatch
			expires := start.Add(30 * 24 * time.Hour)
			for i := range n {
				at := expires.Add(time.Duration(i) * time.Millisecond).Format(event.TimeFormat)
				if _, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
					ExpiresAt: licensing.Optional[string]{Set: true, Value: &at}}); err != nil {
					b.Fatal(err)
				}
			}
			drain := func() int {
				total := 0
				for {
					k, err := lic.FireDueExpiries(ctx, licensing.ExpiryBatch)
					if err != nil {
						b.Fatal(err)
					}
					if total += k; k == 0 {
						return total
					}
				}
			}
			mu.Lock()
			clock = expires.Add(-time.Duration(store.DefaultExpiringSoonLead) * time.Second).Add(time.Hour)
			mu.Unlock()
			if k := drain(); k != n { // every expiring-soon, untimed
				b.Fatalf("fired %d expiring-soon; want %d", k, n)
			}
			if _, err := st.AnalyzeStale(ctx); err != nil { // as the server does between its runs
				b.Fatal(err)
			}
			mu.Lock()
			clock = expires.Add(time.Hour)
			mu.Unlock()
			fired := 0
			b.ResetTimer()
			for range b.N {
				k, err := lic.FireDueExpiries(ctx, licensing.ExpiryBatch)
				if err != nil {
					b.Fatal(err)
				}
				fired += k
			}
			b.StopTimer()
			if fired != n {
				b.Fatalf("fired %d license.expired; want %d", fired, n)
			}
			b.ReportMetric(float64(fired)/b.Elapsed().Seconds(), "licenses/s")
		})
	}
}
