package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// BatchHooks gives account the same webhooks for every account of a
// comparison: subscribed to the expiry kinds or not, filtered, disabled,
// suspended, and one whose stored filter no longer parses.
func BatchHooks(t *testing.T, b *Bundle, accountID string) {
	t.Helper()
	soonAndExpired := []event.Kind{event.LicenseExpiringSoon, event.LicenseExpired}
	hooks := []struct {
		name    string
		events  []event.Kind
		enabled bool
		filter  string
	}{
		{"both", soonAndExpired, true, ""},
		{"gold-expired", []event.Kind{event.LicenseExpired}, true, `{"data.metadata.tier":"gold"}`},
		{"off-not-gold", soonAndExpired, false, `{"data.metadata.tier":{"$neq":"gold"}}`},
		{"suspended", []event.Kind{event.LicenseExpired}, true, ""},
		{"created", []event.Kind{event.LicenseCreated}, true, ""},
		{"moved", []event.Kind{event.LicenseExpiresAtUpdated}, true, ""},
		{"broken-filter", []event.Kind{event.LicenseExpiringSoon}, true, `{"data.metadata.tier":"gold"}`},
	}
	for _, h := range hooks {
		n := store.NewWebhook{Name: h.name, URL: "https://example.com/" + h.name, Events: h.events, Enabled: h.enabled,
			Token: "whsec_" + h.name + "_0123456789"}
		if h.filter != "" {
			n.Filter = json.RawMessage(h.filter)
		}
		w, err := b.St.CreateWebhook(b.Ctx, accountID, n)
		if err != nil {
			t.Fatalf("create webhook %s: %v", h.name, err)
		}
		var change string
		switch h.name {
		case "suspended":
			change = `UPDATE webhooks SET status = 'Suspended' WHERE id = ?`
		case "broken-filter":
			change = `UPDATE webhooks SET filter = '{"$nosuch": 1}' WHERE id = ?`
		default:
			continue
		}
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(b.Ctx, change, w.ID)
			return err
		}); err != nil {
			t.Fatalf("change webhook %s: %v", h.name, err)
		}
	}
}

// FiredAs describes every event of an account in firing (id) order: its
// kind and data, then each of its logs by webhook name, with status,
// reason, and whether it is due (queued) or complete (cancelled).
func FiredAs(t *testing.T, b *Bundle, accountID string) []string {
	t.Helper()
	rows, err := b.St.Query(b.Ctx, `SELECT e.id, e.kind, e.body, COALESCE(w.name, ''), COALESCE(l.status, ''), COALESCE(l.retry_reason, ''),
  l.due_at IS NOT NULL, l.completed_at IS NOT NULL
FROM events e LEFT JOIN webhook_event_logs l ON l.event_id = e.id LEFT JOIN webhooks w ON w.id = l.webhook_id
WHERE e.account_id = ? ORDER BY e.id, w.name`, accountID)
	if err != nil {
		t.Fatalf("read fired events: %v", err)
	}
	defer rows.Close()
	var out []string
	last := ""
	for rows.Next() {
		var id, kind, name, status, reason string
		var body []byte
		var due, done bool
		if err := rows.Scan(&id, &kind, &body, &name, &status, &reason, &due, &done); err != nil {
			t.Fatalf("read fired events: %v", err)
		}
		if id != last {
			var p struct {
				Event string          `json:"event"`
				Data  json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(body, &p); err != nil || p.Event != kind {
				t.Fatalf("event %s: body %s (%v); want a payload of %s", id, body, err, kind)
			}
			out = append(out, fmt.Sprintf("%s %s:", kind, p.Data))
			last = id
		}
		if name != "" {
			out[len(out)-1] += fmt.Sprintf(" %s=%s(%s) due=%v done=%v;", name, status, reason, due, done)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read fired events: %v", err)
	}
	return out
}

// testFireBatchFiresAsOneByOne fires the same events through FireBatch
// (one batch holding two accounts' events, interleaved) and one by one
// through Fire (a third account), with the same webhooks: the same events,
// in the order given, with the same logs, filters honoured.
func testFireBatchFiresAsOneByOne(t *testing.T, b *Bundle) {
	one := b.Account.ID
	batchA, batchB := b.NewAccount(t, "batch-a@example.com").ID, b.NewAccount(t, "batch-b@example.com").ID
	for _, a := range []string{one, batchA, batchB} {
		BatchHooks(t, b, a)
	}
	type ev struct {
		kind event.Kind
		data map[string]any
	}
	gold := map[string]any{"tier": "gold"}
	basic := map[string]any{"tier": "basic"}
	events := []ev{
		{event.LicenseExpiringSoon, map[string]any{"id": "L1", "metadata": gold}},
		{event.LicenseExpired, map[string]any{"id": "L1", "metadata": gold}},
		{event.LicenseExpired, map[string]any{"id": "L2", "metadata": basic}},
		{event.LicenseExpiringSoon, map[string]any{"id": "L2", "metadata": basic}},
		{event.LicenseCreated, map[string]any{"id": "L3", "metadata": map[string]any{}}},
		{event.LicenseExpired, map[string]any{"id": "L3", "metadata": map[string]any{}}},
		{event.ProductCreated, map[string]any{"id": "P1", "name": "Zoë 🎉 <b>&amp;\u2028\x00\\\"\u00e9"}},
	}
	var oneIDs []string
	for _, e := range events {
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			id, err := tx.Fire(b.Ctx, one, e.kind, e.data)
			oneIDs = append(oneIDs, id)
			return err
		}); err != nil {
			t.Fatalf("fire %s: %v", e.kind, err)
		}
	}
	var firings []store.Firing
	for _, e := range events {
		for _, a := range []string{batchA, batchB} {
			firings = append(firings, store.Firing{AccountID: a, Kind: e.kind, Data: e.data})
		}
	}
	var batchIDs []string
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		var err error
		batchIDs, err = tx.FireBatch(b.Ctx, firings)
		return err
	}); err != nil {
		t.Fatalf("fire batch: %v", err)
	}
	if len(batchIDs) != len(firings) || len(oneIDs) != len(events) {
		t.Fatalf("ids %d one by one, %d in the batch; want %d and %d", len(oneIDs), len(batchIDs), len(events), len(firings))
	}
	for i := 1; i < len(batchIDs); i++ {
		if batchIDs[i] <= batchIDs[i-1] {
			t.Fatalf("batch ids %v: want them in firing order", batchIDs)
		}
	}

	disabled := "off-not-gold=cancelled(" + store.ReasonDisabled + ") due=false done=true;"
	suspended := "suspended=cancelled(" + store.ReasonSuspended + ") due=false done=true;"
	queued := func(name string) string { return name + "=queued() due=true done=false;" }
	want := []string{
		`license.expiring-soon {"id":"L1","metadata":{"tier":"gold"}}: ` + queued("both") + " " + queued("broken-filter"),
		`license.expired {"id":"L1","metadata":{"tier":"gold"}}: ` + queued("both") + " " + queued("gold-expired") + " " + suspended,
		`license.expired {"id":"L2","metadata":{"tier":"basic"}}: ` + queued("both") + " " + disabled + " " + suspended,
		`license.expiring-soon {"id":"L2","metadata":{"tier":"basic"}}: ` + queued("both") + " " + queued("broken-filter") + " " + disabled,
		`license.created {"id":"L3","metadata":{}}: ` + queued("created"),
		`license.expired {"id":"L3","metadata":{}}: ` + queued("both") + " " + disabled + " " + suspended,
		`product.created {"id":"P1","name":"Zoë 🎉 <b>&amp;` + "\u2028" + `\u0000\\\"é"}:`, // U+2028 raw, as event.Build writes it
	}
	for name, a := range map[string]string{"one by one": one, "the batch's first account": batchA, "the batch's second account": batchB} {
		got := FiredAs(t, b, a)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("fired %s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// Each body is byte for byte the one event.Build makes of its id, kind,
	// data and time (raw UTF-8 through the JSON argument on either engine).
	for _, a := range []string{one, batchA, batchB} {
		rows, err := b.St.Query(b.Ctx, `SELECT id, kind, body, triggered_at FROM events WHERE account_id = ? ORDER BY id`, a)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rows.Next() {
			var id, kind string
			var body []byte
			var at int64
			if err := rows.Scan(&id, &kind, &body, &at); err != nil {
				t.Fatal(err)
			}
			want, err := event.Build(id, event.Kind(kind), events[i].data, store.FromMS(at))
			if err != nil || string(body) != string(want) {
				t.Errorf("event %s body:\n%q\nwant event.Build's:\n%q (%v)", id, body, want, err)
			}
			i++
		}
		rows.Close()
		if i != len(events) {
			t.Errorf("%d events of account %s; want %d", i, a, len(events))
		}
	}
	// Every queued log (9 per account, above) is due now: work for the
	// dispatcher.
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE status = 'queued' AND due_at = ?`, store.MS(b.Clock.Now())); n != 3*9 {
		t.Errorf("%d queued logs due now; want %d", n, 3*9)
	}
}

// Normalise keeps of a line of FiredAs what two accounts' firings share:
// the kind, the license's metadata and the logs, not the ids or times.
func Normalise(line string) string {
	kind, rest, _ := strings.Cut(line, " ")
	data, logs, _ := strings.Cut(rest, ": ")
	var l struct {
		ExpiresAt string          `json:"expiresAt"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	json.Unmarshal([]byte(strings.TrimSuffix(data, ":")), &l)
	return fmt.Sprintf("%s %s: %s", kind, l.Metadata, logs)
}
