package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	hc "github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestAccountLimits: an operator sets an account's limits through the
// operator API; the webhook cap answers 409 saying the limit and the count,
// the rate 429 saying it is the account's; invalid limits are refused
// naming the field and change nothing; null clears a limit.
func TestAccountLimits(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL, OperatorToken: operatorToken})
		ctx := t.Context()
		op := hc.New(h.URL, operatorToken, nil)
		accts, err := op.ListAccounts(ctx, hc.ListOptions{})
		if err != nil || len(accts.Data) != 1 {
			t.Fatalf("accounts: %+v, %v; want the first one", accts, err)
		}
		id := accts.Data[0].ID
		if l := accts.Data[0].Limits; l.Webhooks != nil || l.APIRequestsPerSecond != nil {
			t.Fatalf("a new account's limits: %+v; want the defaults (null)", l)
		}

		acct, err := op.SetAccountLimits(ctx, id, hc.LimitsChange{Webhooks: hc.To(2)})
		if err != nil || acct.Limits.Webhooks == nil || *acct.Limits.Webhooks != 2 || acct.Limits.APIRequestsPerSecond != nil {
			t.Fatalf("set a cap of 2: %+v, %v", acct.Limits, err)
		}
		create := func(name string) error {
			_, err := h.API.CreateWebhook(ctx, hc.WebhookCreate{Name: name, URL: "https://example.com/" + name, Events: []string{"license.created"}})
			return err
		}
		for _, name := range []string{"one", "two"} {
			if err := create(name); err != nil {
				t.Fatalf("create %s under the cap: %v", name, err)
			}
		}
		var ce *hc.Error
		if err := create("three"); !errors.As(err, &ce) || ce.Status != 409 ||
			!strings.Contains(ce.Detail, "this account may have at most 2 webhooks; it has 2") {
			t.Fatalf("create past the cap: %v; want 409 saying the limit and the count", err)
		}

		// Invalid limits: 422 naming the field, and nothing changes.
		for _, body := range []string{
			`{"limits": {"webhooks": 0}}`,
			`{"limits": {"webhooks": -1}}`,
			`{"limits": {"webhooks": 1.5}}`,
			`{"limits": {"webhooks": "5"}}`,
			`{"limits": {"webhooks": 1e3}}`,
			`{"limits": {"webhooks": 1000001}}`,
			`{"limits": {"apiRequestsPerSecond": 5, "webhooks": true}}`,
		} {
			status, out := patch(t, h.URL+"/v3/operator/accounts/"+id, body)
			if status != 422 || !strings.Contains(out, `"limits.webhooks"`) {
				t.Errorf("PATCH %s: %d %s; want 422 naming limits.webhooks", body, status, out)
			}
		}
		if status, out := patch(t, h.URL+"/v3/operator/accounts/"+id, `{"limits": {"bogus": 1}}`); status != 422 || !strings.Contains(out, `"limits.bogus"`) {
			t.Errorf("PATCH an unknown limit: %d %s; want 422 naming limits.bogus", status, out)
		}
		if status, out := patch(t, h.URL+"/v3/operator/accounts/"+id, `{"limits": {"webhooks": 9, "apiRequestsPerSecond": 0}}`); status != 422 ||
			!strings.Contains(out, `"limits.apiRequestsPerSecond"`) {
			t.Errorf("PATCH a bad rate: %d %s; want 422 naming limits.apiRequestsPerSecond", status, out)
		}
		if status, _ := patch(t, h.URL+"/v3/operator/accounts/0190f4a2-0000-7000-8000-000000000000", `{"limits": {"webhooks": 3}}`); status != 404 {
			t.Errorf("PATCH an unknown account: %d; want 404", status)
		}
		accts, err = op.ListAccounts(ctx, hc.ListOptions{})
		if err != nil || accts.Data[0].Limits.Webhooks == nil || *accts.Data[0].Limits.Webhooks != 2 || accts.Data[0].Limits.APIRequestsPerSecond != nil {
			t.Fatalf("limits after refused changes: %+v, %v; want a cap of 2 and no rate", accts.Data[0].Limits, err)
		}

		// The rate: 1 a second, bursts of 2, whatever the token's own limit.
		if _, err := op.SetAccountLimits(ctx, id, hc.LimitsChange{APIRequestsPerSecond: hc.To(1)}); err != nil {
			t.Fatal(err)
		}
		var limited *hc.Error
		for range 10 {
			if _, err := h.API.ListWebhooks(ctx, hc.WebhookFilter{}); errors.As(err, &limited) {
				break
			}
		}
		if limited == nil || limited.Status != 429 || limited.RetryAfter <= 0 || !strings.Contains(limited.Detail, "this account") {
			t.Fatalf("ten calls at once at 1 a second: %+v; want 429 with Retry-After, naming the account's limit", limited)
		}

		// Cleared (null), both limits are gone: calls go through and the
		// third webhook is created.
		acct, err = op.SetAccountLimits(ctx, id, hc.LimitsChange{Webhooks: hc.Default(), APIRequestsPerSecond: hc.Default()})
		if err != nil || acct.Limits.Webhooks != nil || acct.Limits.APIRequestsPerSecond != nil {
			t.Fatalf("cleared limits: %+v, %v; want null", acct.Limits, err)
		}
		if err := create("three"); err != nil {
			t.Fatalf("create after the cap was cleared: %v", err)
		}
	})
}

// patch sends a PATCH with the operator token and returns its status and body.
func patch(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "PATCH", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p json.RawMessage
	if resp.StatusCode >= 400 && json.Unmarshal(b, &p) != nil {
		t.Errorf("PATCH %s: the answer is not JSON: %s", body, b)
	}
	return resp.StatusCode, string(b)
}

// Two heralds on one PostgreSQL count an account's rate together: calls
// one of them made are refused by the other, whatever the tokens.
func TestAccountRateIsSharedByProcesses(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "two heralds on one PostgreSQL")
	db := heraldtest.PostgresURL(t)
	h1 := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, OperatorToken: operatorToken})
	h2 := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Key: h1.Options.Key, Token: h1.Token, OperatorToken: operatorToken})
	ctx := t.Context()
	op := hc.New(h1.URL, operatorToken, nil)
	accts, err := op.ListAccounts(ctx, hc.ListOptions{})
	if err != nil || len(accts.Data) != 1 {
		t.Fatalf("accounts: %+v, %v", accts, err)
	}
	if _, err := op.SetAccountLimits(ctx, accts.Data[0].ID, hc.LimitsChange{APIRequestsPerSecond: hc.To(5)}); err != nil {
		t.Fatal(err)
	}
	// h1 spends the account's rate, as fast as it answers, while h2 calls
	// four times a second: under the rate (5 a second, a burst of 10), so
	// that alone h2 would never refuse one, whatever pace a busy machine
	// allows it. Sharing, h2 counts h1's calls too and refuses one, once
	// the two have shared their counts (every ratelimit.SyncInterval); the
	// bound is a minute, for a machine slowed many times over.
	spend, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for spend.Err() == nil {
			h1.API.ListWebhooks(spend, hc.WebhookFilter{})
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for calls := 1; ; calls++ {
		_, err := h2.API.ListWebhooks(ctx, hc.WebhookFilter{})
		var ce *hc.Error
		if errors.As(err, &ce) && ce.Status == 429 {
			t.Logf("h2 refused its call %d", calls)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("h2 allowed all %d calls in a minute while h1 spent the account's rate; want one refused, as h1's calls count at h2 too", calls)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
