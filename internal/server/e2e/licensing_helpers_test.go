package e2e_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// onEachEngine runs test against a herald on SQLite, and on PostgreSQL in a
// fresh schema of the server HERALD_TEST_POSTGRES_URL names (skipped
// without it, failed under CI).
func onEachEngine(t *testing.T, test func(t *testing.T, h *heraldtest.Herald)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, heraldtest.Start(t, heraldtest.Options{}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.PostgresURL(t)}))
	})
}

// allKinds is every event kind a webhook may subscribe to.
func allKinds() []string {
	out := make([]string, len(event.Kinds))
	for i, k := range event.Kinds {
		out[i] = string(k)
	}
	return out
}

// watch subscribes a new receiver to kinds.
func watch(t *testing.T, h *heraldtest.Herald, kinds ...string) (*heraldtest.Receiver, heraldtest.Webhook) {
	t.Helper()
	rcv := heraldtest.NewReceiver(t)
	return rcv, h.CreateWebhook("watch", rcv.URL, kinds...)
}

// fired runs fn and returns the kinds of the events it fired for the
// webhook, in firing order. Events and their logs are written in the
// transaction of the change, so they are all there once fn's calls have
// answered; no waiting is needed.
func fired(t *testing.T, h *heraldtest.Herald, hookID string, fn func()) []heraldtest.Log {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range h.Logs("webhookId=" + hookID) {
		seen[l.ID] = true
	}
	fn()
	var out []heraldtest.Log
	for _, l := range h.Logs("webhookId=" + hookID) {
		if !seen[l.ID] {
			out = append(out, l)
		}
	}
	slices.Reverse(out) // lists are newest first
	return out
}

func kindsOf(logs []heraldtest.Log) []string {
	out := make([]string, len(logs))
	for i, l := range logs {
		out[i] = l.Event
	}
	return out
}

// delivered is a payload a receiver got.
type delivered struct {
	ID          string          `json:"id"`
	Event       string          `json:"event"`
	Data        json.RawMessage `json:"data"`
	TriggeredAt string          `json:"triggeredAt"`
	Body        []byte          `json:"-"` // as it came
}

// receive waits until the receiver has got n deliveries, then gives events
// that should not come a moment to show up, and returns what arrived.
func receive(t *testing.T, rcv *heraldtest.Receiver, n int) []delivered {
	t.Helper()
	heraldtest.Eventually(t, 10*time.Second, "the deliveries", func() bool { return rcv.Count() >= n })
	time.Sleep(200 * time.Millisecond)
	var out []delivered
	for _, r := range rcv.Requests() {
		var d delivered
		if err := json.Unmarshal(r.Body, &d); err != nil {
			t.Fatalf("delivery %s: %v", r.Body, err)
		}
		d.Body = r.Body
		out = append(out, d)
	}
	if len(out) != n {
		t.Fatalf("receiver got %d deliveries %v; want %d", len(out), deliveredKinds(out), n)
	}
	return out
}

// only returns the one delivery of kind; deliveries of separate events
// may arrive in any order.
func only(t *testing.T, ds []delivered, kind string) delivered {
	t.Helper()
	var out []delivered
	for _, d := range ds {
		if d.Event == kind {
			out = append(out, d)
		}
	}
	if len(out) != 1 {
		t.Fatalf("got %d deliveries of %s among %v; want 1", len(out), kind, deliveredKinds(ds))
	}
	return out[0]
}

func deliveredKinds(ds []delivered) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Event
	}
	return out
}

// sameJSON fails the test unless a and b hold equal JSON values.
func sameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v in %s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// problem is an API error answer.
type problem struct {
	Type   string
	Title  string
	Status int
	Detail string
	Errors []struct{ Field, Detail string }
}

// resource is what the tests read of any licensing resource.
type resource = map[string]any

func idOf(r resource) string { return r["id"].(string) }

// jsonOf re-encodes a decoded answer, to compare with payload data.
func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
