package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestStopLeavesNoClaimBehind stops `herald serve` with SIGTERM again and
// again while it delivers a backlog, on each engine. A graceful stop lets
// the attempts in flight finish and be recorded, and releases every log it
// claimed but did not attempt (a claim the stop cut short, logs waiting for
// their webhook's gate): after each stop no log is pending, and after the
// last restart every log succeeds at once, with the lease at 5 minutes, so
// that waiting one out is out of the question. Nothing is delivered twice,
// since no attempt times out.
func TestStopLeavesNoClaimBehind(t *testing.T) {
	t.Parallel() // its time-out and lease are minutes: a busy machine changes nothing
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		heraldtest.DumpLogsOnFailure(t, dbURL)
		key := make([]byte, 32)
		rand.Read(key)
		token := auth.NewAPIToken()
		env := []string{
			"HERALD_DATABASE_URL=" + dbURL,
			"HERALD_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
			"HERALD_BOOTSTRAP_TOKEN=" + token,
			"HERALD_ALLOW_PRIVATE_NETWORKS=true",
			"HERALD_RATE_LIMIT=0",       // a load test, not a rate-limit one
			"HERALD_ATTEMPT_TIMEOUT=1m", // nothing times out, however busy the machine
			"HERALD_LEASE=5m",
			"HERALD_RETRY_INTERVAL=100ms",
			"HERALD_LOG_LEVEL=warn",
		}
		addr := freeAddr(t)
		p := startServe(t, env, addr)
		const hooks, events = 4, 800
		hold := make(chan struct{}) // a backlog builds up while the events are fired
		rcvs := make([]*pairReceiver, hooks)
		for i := range rcvs {
			rcvs[i] = newPairReceiver(t)
			rcvs[i].delay = 50 * time.Millisecond // a backlog that lasts several stops
			rcvs[i].hold = hold
			var hook struct{ ID, Token string }
			call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{
				"name": fmt.Sprintf("stop %d", i), "url": rcvs[i].url, "events": []string{"license.created"}}, &hook)
			rcvs[i].token.Store(&hook.Token)
		}
		var product struct{ ID string }
		call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "Stop"}, &product)
		fireAt(t, p.url, token, product.ID, events)
		close(hold)

		db := heraldtest.OpenDB(t, dbURL)
		// Each stop comes as soon as the restarted herald delivers again,
		// while its first claims are being made and attempted.
		for round := 1; round <= 6; round++ {
			before := received(rcvs)
			if before >= hooks*events {
				break
			}
			heraldtest.Eventually(t, time.Minute, "deliveries to go on", func() bool { return received(rcvs) > before })
			p.stop(t, syscall.SIGTERM)
			t.Logf("stop %d after %d deliveries", round, received(rcvs))
			if n := db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL`); n > 0 {
				t.Errorf("stop %d: %d logs left pending (claimed, never attempted, waiting out a 5m lease)", round, n)
			}
			p = startServe(t, env, addr)
		}
		heraldtest.Eventually(t, 2*time.Minute, "every log to succeed after the last restart", func() bool {
			return db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE status <> 'succeeded'`) == 0 && distinct(rcvs) == hooks*events
		})
		if dups := received(rcvs) - distinct(rcvs); dups > 0 {
			t.Errorf("%d deliveries made twice; a graceful stop records every attempt it made", dups)
		}
	})
}

// fireAt creates n licenses through the herald at base, 8 at a time.
func fireAt(t *testing.T, base, token, productID string, n int) {
	body, _ := json.Marshal(map[string]any{"productId": productID})
	var wg sync.WaitGroup
	work := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest("POST", base+"/v3/licenses", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("create license: %v", err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("create license: status %d", resp.StatusCode)
				}
			}
		}()
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}
