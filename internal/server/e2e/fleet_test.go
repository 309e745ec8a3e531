package e2e_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/notify/smtptest"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// startFleet starts n heralds on one new PostgreSQL schema, sharing key and
// token as an operator's processes would.
func startFleet(t *testing.T, n int, o heraldtest.Options) []*heraldtest.Herald {
	t.Helper()
	heraldtest.SkipShort(t, "a fleet of heralds on one PostgreSQL")
	heraldtest.PostgresHandles(t, n+1) // the heralds, and a store a test may open beside them
	o.DatabaseURL = heraldtest.PostgresURL(t)
	return startFleetOn(t, n, o)
}

// startFleetOn starts n heralds on o.DatabaseURL (PostgreSQL), sharing a
// key and a token. While they run, the database's statements that run for
// two seconds or more are sampled, and logged if the test fails
// (testdb.WatchStalls).
func startFleetOn(t *testing.T, n int, o heraldtest.Options) []*heraldtest.Herald {
	t.Helper()
	testdb.WatchStalls(t, o.DatabaseURL)
	o.Key = make([]byte, 32)
	rand.Read(o.Key)
	o.Token = auth.NewAPIToken()
	fleet := make([]*heraldtest.Herald, n)
	for i := range fleet {
		fleet[i] = heraldtest.Start(t, o)
	}
	return fleet
}

// Failures recorded at once by three processes suspend the webhook once, and
// of the three email outboxes exactly one sends each of the two warnings.
func TestFleetSuspendsOnceAndEmailsOnce(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	const events, suspendAfter = 60, 20
	// Each outbox looks for emails every 50ms, besides when woken.
	fleet := startFleet(t, 3, heraldtest.Options{SMTPURL: mail.URL(), EmailCheck: 50 * time.Millisecond,
		Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: suspendAfter}})
	h := fleet[0]
	rcv := heraldtest.NewReceiver(t)
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // attempts of the three processes overlap
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	hook := h.CreateWebhook("shared", rcv.URL, "license.created")
	var product struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	var wg sync.WaitGroup
	for i := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleet[i%len(fleet)].Must(201, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
		}()
	}
	wg.Wait()
	heraldtest.Eventually(t, 30*time.Second, "every log to complete", func() bool {
		n := 0
		for _, st := range []string{"failed", "cancelled"} {
			n += len(h.Logs("webhookId=" + hook.ID + "&status=" + st))
		}
		return n == events
	})
	if got := h.Webhook(hook.ID).Status; got != "Suspended" {
		t.Fatalf("webhook %s; want Suspended", got)
	}
	failed := len(h.Logs("webhookId=" + hook.ID + "&status=failed"))
	if failed < suspendAfter {
		t.Errorf("%d failed events; want at least %d", failed, suspendAfter)
	}
	// Two warnings: Unhealthy, then suspended.
	mail.WaitFor(t, 2, 10*time.Second)
	time.Sleep(time.Second) // every outbox has looked many times more
	if n := len(mail.Messages()); n != 2 {
		t.Errorf("%d emails sent; want exactly 2", n)
	}
	for _, kind := range []string{"unhealthy", "suspended"} {
		var queued int
		if err := h.Server.Store.QueryRow(context.Background(), `SELECT COUNT(*) FROM emails WHERE kind = ?`, kind).Scan(&queued); err != nil || queued != 1 {
			t.Errorf("%d %s emails queued (%v); want 1", queued, kind, err)
		}
	}
}

// An idle process whose dispatcher would otherwise sleep a minute delivers
// an event another process fired at once: LISTEN/NOTIFY wakes it.
func TestIdleProcessIsWokenByAnotherProcess(t *testing.T) {
	t.Parallel()
	fleet := startFleet(t, 1, heraldtest.Options{Delivery: delivery.Config{PollInterval: time.Minute}})
	h := fleet[0]
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("woken", rcv.URL, "license.created")
	time.Sleep(300 * time.Millisecond) // the dispatcher is asleep

	// The other process only fires: a store handle with no dispatcher.
	other, err := store.Open(context.Background(), h.Options.DatabaseURL, store.Options{Key: h.Options.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	account, err := other.AccountByTokenHash(context.Background(), auth.HashToken(h.Token))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		start := time.Now()
		if err := other.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.Fire(context.Background(), account.ID, event.LicenseCreated, map[string]any{"n": i})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		heraldtest.Eventually(t, 5*time.Second, "the idle process to deliver", func() bool { return rcv.Count() == i+1 })
		t.Logf("fired by another process, delivered %s later", time.Since(start).Round(time.Millisecond))
		time.Sleep(200 * time.Millisecond)
	}
	if logs := h.Logs("webhookId=" + hook.ID + "&status=succeeded"); len(logs) != 3 {
		t.Errorf("%d logs succeeded; want 3", len(logs))
	}
}

// A token revoked through one process is refused by another at its very
// next request: no process keeps tokens in memory.
func TestRevokedTokenIsRefusedByEveryProcessAtOnce(t *testing.T) {
	t.Parallel()
	fleet := startFleet(t, 2, heraldtest.Options{})
	var tok struct{ ID, Token string }
	fleet[0].Must(201, "POST", "/v3/api-tokens", map[string]any{"name": "shared", "scope": "write"}, &tok)
	if got := fleet[1].DoAs(tok.Token, "GET", "/v3/account", nil, nil); got != http.StatusOK {
		t.Fatalf("the new token at the other process: %d; want 200", got)
	}
	fleet[0].Must(204, "DELETE", "/v3/api-tokens/"+tok.ID, nil, nil)
	if got := fleet[1].DoAs(tok.Token, "GET", "/v3/account", nil, nil); got != http.StatusUnauthorized {
		t.Errorf("revoked at one process, used at the other: %d; want 401", got)
	}
}

// A token revoked through one process is refused at once by another that
// keeps it from a read less than a second before (decision 0110), on the
// call that checks it in its statement, creating a license: refused by the
// statement, which writes nothing, whether the license would have been
// created or not, and, where the call fails before its statement, by a
// read of the token before the answer, as is a refusal by its scope. The
// heralds' clock runs a thousand times slower than the wall's, so that the
// second the token is kept outlasts the test on any machine.
func TestKeptTokenRevokedElsewhereIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	start := time.Now()
	slow := func() time.Time { return start.Add(time.Since(start) / 1000) }
	fleet := startFleet(t, 2, heraldtest.Options{Now: slow})
	var tok struct{ ID, Token string }
	fleet[0].Must(201, "POST", "/v3/api-tokens", map[string]any{"name": "shared", "scope": "write"}, &tok)
	var product struct{ ID string }
	fleet[0].Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	licenses := func() int {
		var list struct{ Data []struct{ ID string } }
		fleet[0].Must(200, "GET", "/v3/licenses?limit=100", nil, &list)
		return len(list.Data)
	}
	if got := fleet[1].DoAs(tok.Token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil); got != http.StatusCreated {
		t.Fatalf("a license created at the other process: %d; want 201", got)
	}
	if got := fleet[1].DoAs(tok.Token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil); got != http.StatusCreated {
		t.Fatalf("a second license, under the kept token: %d; want 201", got)
	}
	fleet[0].Must(204, "DELETE", "/v3/api-tokens/"+tok.ID, nil, nil)
	for _, c := range []struct {
		what string
		body any
	}{
		{"a license", map[string]any{"productId": product.ID}},
		{"a license of another account's product", map[string]any{"productId": store.NewID()}},
		{"a license with a key already taken", nil},
		{"a body that is not JSON", "{"},
		{"a field that is not the license's", map[string]any{"productId": product.ID, "color": "red"}},
	} {
		body := c.body
		if body == nil {
			var l struct{ Key string }
			fleet[0].Must(201, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, &l)
			body = map[string]any{"productId": product.ID, "key": l.Key}
		}
		var p struct{ Type, Detail string }
		if got := fleet[1].DoAs(tok.Token, "POST", "/v3/licenses", body, &p); got != http.StatusUnauthorized ||
			p.Detail != "the API token is not valid: unknown, revoked or expired" {
			t.Errorf("%s, revoked at one process, asked of the other: %d %q; want 401 saying the token is not valid", c.what, got, p.Detail)
		}
	}
	if n := licenses(); n != 3 {
		t.Errorf("%d licenses; want the 2 made before the revocation and the one made to take its key", n)
	}

	// A read token kept from a refused call is refused as not valid once
	// revoked, not as read-only: no answer under a kept token says more.
	var read struct{ ID, Token string }
	fleet[0].Must(201, "POST", "/v3/api-tokens", map[string]any{"name": "reader", "scope": "read"}, &read)
	if got := fleet[1].DoAs(read.Token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil); got != http.StatusForbidden {
		t.Fatalf("a read token creating a license: %d; want 403", got)
	}
	fleet[0].Must(204, "DELETE", "/v3/api-tokens/"+read.ID, nil, nil)
	if got := fleet[1].DoAs(read.Token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil); got != http.StatusUnauthorized {
		t.Errorf("a kept read token, revoked elsewhere, creating a license: %d; want 401", got)
	}
}
