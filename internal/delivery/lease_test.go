package delivery_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// Logs of one webhook wait for its gate (PerWebhook requests in flight). A
// log that waited so long that its attempt could outlast its lease must not be
// sent: another process (here a second dispatcher on the same database) takes
// the log once the lease ends, and the same delivery would go out twice with
// nobody having crashed. Scaled down: time-out 1s, lease 2.5s, PerWebhook 2,
// and a receiver that answers the first request and lets the rest time out.
// The store is real (SQLite); the time is testing/synctest's, so the
// seconds below pass at once, and the receiver is reached over net.Pipe,
// since a goroutine waiting on a socket would keep the fake clock still.
func TestNoDeliveryOutlivesItsLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testNoDeliveryOutlivesItsLease)
}

func testNoDeliveryOutlivesItsLease(t *testing.T) {
	var n atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusNoContent) // the first answers at once
			return
		}
		time.Sleep(1500 * time.Millisecond) // the rest time out
	})

	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), testdb.SQLiteURL(t), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(context.Background(), store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{Name: "h", URL: rcv.URL,
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"}); err != nil {
		t.Fatal(err)
	}
	err = st.InTx(context.Background(), func(tx *store.Tx) error {
		for range 6 {
			if _, err := tx.Fire(context.Background(), acct.ID, event.LicenseCreated, event.Sample(event.LicenseCreated, time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := delivery.Config{AttemptTimeout: time.Second, Lease: 2500 * time.Millisecond, PerWebhook: 2,
		RetryInterval: time.Hour, PollInterval: 100 * time.Millisecond, Dial: rcv.Dial}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); delivery.New(queue.New(st).ForDelivery(), cfg).Run(ctx) }() // process A
	go func() {                                                                              // process B, started later
		defer wg.Done()
		time.Sleep(2 * time.Second)
		delivery.New(queue.New(st).ForDelivery(), cfg).Run(ctx)
	}()
	time.Sleep(4500 * time.Millisecond)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id, k := range seen {
		if k > 1 {
			t.Errorf("event %s sent %d times with no retry due (retry interval 1h) and no process dead; want once", id, k)
		}
	}
}
