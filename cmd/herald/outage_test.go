package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// TestPostgresRestartLosesNothing stops and starts PostgreSQL (a private
// server: the machine's is shared) under two herald processes while events
// keep being fired. While it is down the processes answer 503 on /readyz;
// once it is back they recover by themselves, and every event acknowledged,
// before, during or after the outage, reaches every webhook.
func TestPostgresRestartLosesNothing(t *testing.T) {
	binary(t) // before the private server starts: -short skips here
	pg := heraldtest.StartPostgres(t)
	heraldtest.DumpLogsOnFailure(t, pg.URL())
	key := make([]byte, 32)
	rand.Read(key)
	token := auth.NewAPIToken()
	env := []string{
		"HERALD_DATABASE_URL=" + pg.URL(),
		"HERALD_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
		"HERALD_BOOTSTRAP_TOKEN=" + token,
		"HERALD_ALLOW_PRIVATE_NETWORKS=true",
		"HERALD_RATE_LIMIT=0", // a load test, not a rate-limit one
		"HERALD_ATTEMPT_TIMEOUT=2s",
		"HERALD_LEASE=5s",
		"HERALD_RETRY_INTERVAL=200ms",
		"HERALD_LOG_LEVEL=warn",
	}
	fleet := []*fleetProc{launch(t, env), launch(t, env)}
	for _, p := range fleet {
		p.waitReady(t)
	}
	const hooks = 2
	rcvs := make([]*pairReceiver, hooks)
	for i := range rcvs {
		rcvs[i] = newPairReceiver(t)
		var hook struct{ ID, Token string }
		call(t, fleet[0].url, token, "POST", "/v3/webhooks", map[string]any{
			"name": "outage", "url": rcvs[i].url, "events": []string{"license.created"}}, &hook)
		rcvs[i].token.Store(&hook.Token)
	}
	var product struct{ ID string }
	call(t, fleet[0].url, token, "POST", "/v3/products", map[string]any{"name": "Outage"}, &product)

	// Fire all along: acknowledged licenses must all arrive; calls refused
	// while the database is down are just refused.
	var (
		mu      sync.Mutex
		acked   []string
		refused atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	body, _ := json.Marshal(map[string]any{"productId": product.ID})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", fleet[i%len(fleet)].url+"/v3/licenses", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("create license: %v (herald must keep serving)", err)
					return
				}
				var l struct{ ID string }
				json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					refused.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked = append(acked, l.ID)
				mu.Unlock()
			}
		}()
	}
	ackedSoFar := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	heraldtest.Eventually(t, 30*time.Second, "events before the outage", func() bool { return ackedSoFar() >= 300 })

	pg.Stop(t)
	down := time.Now()
	for _, p := range fleet {
		heraldtest.Eventually(t, 10*time.Second, "/readyz to answer 503 with the database down", func() bool {
			return readyz(p) == http.StatusServiceUnavailable
		})
	}
	// An API call meanwhile is told to come back, not given a bare 500.
	req, _ := http.NewRequest("GET", fleet[0].url+"/v3/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err != nil {
		t.Errorf("API call with the database down: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("API call with the database down: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// Longer than the lease (5s): outcomes that could not be recorded by
	// then are given up, and their logs delivered again once it is back.
	time.Sleep(7 * time.Second)
	ackedDown := ackedSoFar()
	pg.Start(t)
	up := time.Now()
	for _, p := range fleet {
		heraldtest.Eventually(t, 30*time.Second, "/readyz to answer 200 again without a restart", func() bool {
			return readyz(p) == http.StatusOK
		})
	}
	ready := time.Since(up)
	before := received(rcvs)
	heraldtest.Eventually(t, 30*time.Second, "deliveries to resume", func() bool { return received(rcvs) > before })
	resumed := time.Since(up)
	heraldtest.Eventually(t, 30*time.Second, "events after the outage", func() bool { return ackedSoFar() >= ackedDown+300 })
	close(stop)
	wg.Wait()
	t.Logf("database down for %s; after it came back: ready in %s, deliveries resumed in %s; %d calls refused meanwhile",
		up.Sub(down).Round(time.Millisecond), ready.Round(time.Millisecond), resumed.Round(time.Millisecond), refused.Load())

	st, err := store.Open(context.Background(), pg.URL(), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func(q string, args ...any) int {
		var n int
		if err := st.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	var events int
	heraldtest.Eventually(t, 60*time.Second, "every event delivered to every webhook", func() bool {
		events = count(`SELECT COUNT(*) FROM events WHERE kind = 'license.created'`)
		return count(`SELECT COUNT(*) FROM webhook_event_logs WHERE status <> 'succeeded'`) == 0 && distinct(rcvs) == events*hooks
	})
	for _, id := range acked {
		if count(`SELECT COUNT(*) FROM licenses WHERE id = ?`, id) != 1 {
			t.Errorf("acknowledged license %s is gone", id)
		}
	}
	if n := count(`SELECT COUNT(*) FROM licenses`); n != events {
		t.Errorf("%d licenses, %d events; want one event per license", n, events)
	}
	for i, p := range fleet {
		if !p.running() {
			t.Errorf("process %d exited: %s", i, p.output())
		}
	}
	t.Logf("%d events acknowledged, %d in the database, all delivered to %d webhooks", len(acked), events, hooks)
}

func readyz(p *fleetProc) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.url + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
