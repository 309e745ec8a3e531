package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/openapitest"
)

const operatorToken = "operator-token-0123456789abcdef0123456789"

func TestOperatorAccounts(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testOperatorAccounts)
}

// startOperated starts a herald with the operator calls on, every call
// checked against the API reference, and returns it with an operator
// client.
func startOperated(t *testing.T, db string) (*heraldtest.Herald, *client.Client) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, OperatorToken: operatorToken,
		Transport: func(rt http.RoundTripper) http.RoundTripper { return openapitest.Transport(t, rt) }})
	return h, client.New(h.URL, operatorToken, h.Client)
}

// problemField is the first field a 422 or 409 named, or "".
func problemField(err error) string {
	var e *client.Error
	if errors.As(err, &e) && len(e.Errors) > 0 {
		return e.Errors[0].Field
	}
	return ""
}

// testOperatorAccounts: an account made through the operator API works
// with its own token and sees nothing of the first account (every
// account-scoped route answers 404 for the other's ids, both ways); bad
// input names its field and changes nothing; the two kinds of token never
// cross; a deleted account's token and ids are gone.
func testOperatorAccounts(t *testing.T, db string) {
	h, op := startOperated(t, db)
	ctx := context.Background()
	b, err := op.CreateAccount(ctx, client.AccountCreate{Name: "Bé's shop", OwnerEmail: "be@example.com", NotificationEmail: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if b.APIToken == "" || b.OwnerPassword == "" || b.Account.NotificationEmail != "ops@example.com" {
		t.Fatalf("created %+v; want a token, a password and the notification email given", b)
	}
	for _, tc := range []struct {
		in    client.AccountCreate
		field string
	}{
		{client.AccountCreate{OwnerEmail: "x@example.com"}, "name"},
		{client.AccountCreate{Name: "X", OwnerEmail: "X <x@example.com>"}, "ownerEmail"},
		{client.AccountCreate{Name: "X", OwnerEmail: "x@example.com", NotificationEmail: "nope"}, "notificationEmail"},
		{client.AccountCreate{Name: "X", OwnerEmail: "be@example.com"}, "ownerEmail"}, // taken: 409
		{client.AccountCreate{Name: "X", OwnerEmail: h.Email}, "ownerEmail"},
	} {
		if _, err := op.CreateAccount(ctx, tc.in); problemField(err) != tc.field {
			t.Errorf("create %+v: %v; want a problem naming %s", tc.in, err, tc.field)
		}
	}
	all, err := op.ListAccounts(ctx, client.ListOptions{Limit: 500})
	if err != nil || len(all.Data) != 2 || all.Data[0].ID != b.Account.ID {
		t.Fatalf("accounts: %+v, %v; want B then the first account, nothing of the refused ones", all.Data, err)
	}

	// The tokens do not cross: account tokens are refused by the operator
	// calls, the operator token by every account call.
	bc := client.New(h.URL, b.APIToken, h.Client)
	if _, err := h.API.ListAccounts(ctx, client.ListOptions{}); !client.IsStatus(err, 401) {
		t.Errorf("an account token lists accounts: %v; want 401", err)
	}
	if _, err := op.ListWebhooks(ctx, client.WebhookFilter{}); !client.IsStatus(err, 401) {
		t.Errorf("the operator token lists webhooks: %v; want 401", err)
	}

	// Each account's resources are the other's 404s.
	rcv := heraldtest.NewReceiver(t)
	aHook := h.CreateWebhook("A", rcv.URL, "license.created")
	h.CreateLicense(nil)
	var aLog string
	heraldtest.Eventually(t, 30*time.Second, "A's delivery", func() bool {
		logs := h.Logs("webhookId=" + aHook.ID)
		if len(logs) == 1 && logs[0].Status == "succeeded" {
			aLog = logs[0].ID
		}
		return aLog != ""
	})
	aTokens, err := h.API.ListAPITokens(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bHook, err := bc.CreateWebhook(ctx, client.WebhookCreate{Name: "B", URL: rcv.URL, Events: []string{"license.created"}})
	if err != nil {
		t.Fatal(err)
	}
	bTokens, err := bc.ListAPITokens(ctx, client.ListOptions{})
	if err != nil || len(bTokens.Data) != 1 {
		t.Fatalf("B's tokens: %+v, %v; want its first", bTokens, err)
	}
	scoped := func(hookID, logID, tokenID string) []struct{ method, path string } {
		return []struct{ method, path string }{
			{"GET", "/v3/webhooks/" + hookID},
			{"PATCH", "/v3/webhooks/" + hookID},
			{"GET", "/v3/webhooks/" + hookID + "/token"},
			{"POST", "/v3/webhooks/" + hookID + "/test"},
			{"DELETE", "/v3/webhooks/" + hookID},
			{"GET", "/v3/webhook-event-logs/" + logID},
			{"POST", "/v3/webhook-event-logs/" + logID + "/resend"},
			{"DELETE", "/v3/api-tokens/" + tokenID},
		}
	}
	for _, c := range scoped(aHook.ID, aLog, aTokens.Data[0].ID) {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"name": "stolen"}
		}
		if got := h.DoAs(b.APIToken, c.method, c.path, body, nil); got != http.StatusNotFound {
			t.Errorf("B: %s %s = %d; want 404", c.method, c.path, got)
		}
	}
	for _, c := range scoped(bHook.ID, aLog, bTokens.Data[0].ID) {
		if c.path == "/v3/webhook-event-logs/"+aLog || c.path == "/v3/webhook-event-logs/"+aLog+"/resend" {
			continue // A's own
		}
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"name": "stolen"}
		}
		if got := h.Do(c.method, c.path, body, nil); got != http.StatusNotFound {
			t.Errorf("A: %s %s = %d; want 404", c.method, c.path, got)
		}
	}
	for _, c := range licensingOf(t, bc) {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"name": "stolen"}
		}
		if got := h.Do(c.method, c.path, body, nil); got != http.StatusNotFound {
			t.Errorf("A: %s %s of B = %d; want 404", c.method, c.path, got)
		}
	}
	if got := h.Webhook(aHook.ID); got.Name != "A" {
		t.Errorf("A's webhook after B's tries: %+v", got)
	}
	if w, err := bc.Webhook(ctx, bHook.ID); err != nil || w.Name != "B" {
		t.Errorf("B's webhook after A's tries: %+v, %v", w, err)
	}
	logs, err := bc.ListEventLogs(ctx, client.LogFilter{ListOptions: client.ListOptions{Limit: 500}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs.Data {
		if l.ID == aLog || l.WebhookID == aHook.ID {
			t.Errorf("B lists A's log %s", l.ID)
		}
	}

	// Portal links: on the address the call came to, single-use tokens.
	link, err := op.CreatePortalLink(ctx, b.Account.ID, 0)
	if err != nil || !strings.HasPrefix(link.URL, h.URL+"/signin/link?token=") {
		t.Errorf("portal link: %+v, %v; want one under %s/signin/link", link, err, h.URL)
	}
	if _, err := op.CreatePortalLink(ctx, b.Account.ID, 2*3600e9); problemField(err) != "ttlSeconds" {
		t.Errorf("a two-hour link: %v; want a problem naming ttlSeconds", err)
	}

	// Deleted: B's token is refused, its ids gone, A untouched.
	if err := op.DeleteAccount(ctx, b.Account.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.ListWebhooks(ctx, client.WebhookFilter{}); !client.IsStatus(err, 401) {
		t.Errorf("a deleted account's token: %v; want 401", err)
	}
	if _, err := op.CreatePortalLink(ctx, b.Account.ID, 0); !client.IsStatus(err, 404) {
		t.Errorf("a link to a deleted account: %v; want 404", err)
	}
	if err := op.DeleteAccount(ctx, b.Account.ID); !client.IsStatus(err, 404) {
		t.Errorf("deleting it again: %v; want 404", err)
	}
	if got := h.Webhook(aHook.ID); got.Name != "A" {
		t.Errorf("A's webhook after B's delete: %+v", got)
	}
}

func TestDeletedAccountsDeliveriesStop(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testDeletedAccountsDeliveriesStop)
}

// testDeletedAccountsDeliveriesStop: an account whose receiver hangs, with
// a backlog, is deleted; the requests already on the wire finish, and not
// one more request of it is sent, while another account's deliveries go on.
func testDeletedAccountsDeliveriesStop(t *testing.T, db string) {
	h, op := startOperated(t, db)
	ctx := context.Background()
	b, err := op.CreateAccount(ctx, client.AccountCreate{Name: "B", OwnerEmail: "b@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	bc := client.New(h.URL, b.APIToken, h.Client)
	hang := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hang) }) }
	t.Cleanup(release)
	slow := heraldtest.NewReceiver(t)
	slow.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if _, err := bc.CreateWebhook(ctx, client.WebhookCreate{Name: "slow", URL: slow.URL, Events: []string{"license.created"}}); err != nil {
		t.Fatal(err)
	}
	p, err := bc.CreateProduct(ctx, "App", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := bc.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID}); err != nil {
			t.Fatal(err)
		}
	}
	// The room herald gives the webhook fills, and then nothing more of B's
	// can go out while its receiver hangs: the count, once it has stopped
	// growing, is every request on the wire. Read at once after the first,
	// a request sent just before the delete could still be arriving after
	// it (about one run in thirty failed so).
	last, since := 0, time.Now()
	heraldtest.Eventually(t, 30*time.Second, "B's deliveries on the wire, every one arrived", func() bool {
		if n := slow.Count(); n != last || n == 0 {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= 500*time.Millisecond
	})

	if err := op.DeleteAccount(ctx, b.Account.ID); err != nil {
		t.Fatal(err)
	}
	onTheWire := slow.Count()
	release()

	// A's delivery is the barrier: the dispatcher has gone round since.
	fast := heraldtest.NewReceiver(t)
	h.CreateWebhook("A", fast.URL, "license.created")
	for range 3 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 30*time.Second, "A's deliveries after B's delete", func() bool { return fast.Count() == 3 })
	if got := slow.Count(); got != onTheWire {
		t.Errorf("B's receiver got %d requests; %d were on the wire when the delete answered, and none may follow", got, onTheWire)
	}
	if got := slow.Count(); got >= 20 {
		t.Errorf("B's whole backlog of 20 was sent; the test proves nothing")
	}
}

// licensingOf makes one of each licensing resource through c and returns
// the calls that read, change or delete each by id.
func licensingOf(t *testing.T, c *client.Client) []struct{ method, path string } {
	t.Helper()
	ctx := context.Background()
	p, err := c.CreateProduct(ctx, "B's product", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.CreateUser(ctx, "customer@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Activate(ctx, l.Key, "fp")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.CreateRelease(ctx, p.ID, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.StartTrial(ctx, p.ID, "fp")
	if err != nil {
		t.Fatal(err)
	}
	return []struct{ method, path string }{
		{"GET", "/v3/products/" + p.ID}, {"PATCH", "/v3/products/" + p.ID},
		{"GET", "/v3/users/" + u.ID}, {"PATCH", "/v3/users/" + u.ID},
		{"GET", "/v3/licenses/" + l.ID}, {"POST", "/v3/licenses/" + l.ID + "/renew"},
		{"GET", "/v3/activations/" + a.ID}, {"DELETE", "/v3/activations/" + a.ID},
		{"GET", "/v3/releases/" + r.ID}, {"DELETE", "/v3/releases/" + r.ID},
		{"GET", "/v3/trial-activations/" + tr.ID}, {"DELETE", "/v3/trial-activations/" + tr.ID},
		{"DELETE", "/v3/licenses/" + l.ID}, {"DELETE", "/v3/users/" + u.ID}, {"DELETE", "/v3/products/" + p.ID},
	}
}

// Without --operator-token the operator calls do not exist: 404 with any
// token, the account's own included.
func TestOperatorCallsAreOffWithoutAToken(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	for _, token := range []string{h.Token, operatorToken, ""} {
		if got := h.DoAs(token, "GET", "/v3/operator/accounts", nil, nil); got != http.StatusNotFound {
			t.Errorf("GET /v3/operator/accounts with %q: %d; want 404", token, got)
		}
	}
	if _, err := client.New(h.URL, operatorToken, nil).CreateAccount(context.Background(), client.AccountCreate{Name: "X", OwnerEmail: "x@example.com"}); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("create an account: %v; want 404", err)
	}
}
