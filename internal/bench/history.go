package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
)

// Scenario h, a long history: Options.HistoryLogs completed logs over 30
// days are written into a fresh store (see seed.go), then herald serves it
// and each read the API and the portal make of that history is timed from
// the bench: every list, filter and page, ranges deep in the past, one
// old log, the webhooks with their undelivered counts, and the metrics'
// gauges.

const (
	historyDays     = 30
	historyWebhooks = 10
)

// HistoryReport is scenario h's figures.
type HistoryReport struct {
	Logs        int     `json:"logs"`        // logs asked for
	Stored      int     `json:"stored"`      // logs in the store after seeding, counted
	Days        int     `json:"days"`        // the history's span
	SeedSeconds float64 `json:"seedSeconds"` // how long the seeding took
	Analyzed    bool    `json:"analyzed"`    // PostgreSQL's statistics were made after seeding
	Reads       []Read  `json:"reads"`
}

// Read is one read's latencies over Options.HistoryReads tries (fewer when
// they pass readBudget), after one untimed try; Status is the last
// answer's HTTP status, and Error says why a try had none.
type Read struct {
	Surface string  `json:"surface"` // api, portal or metrics
	Name    string  `json:"name"`
	Path    string  `json:"path"`
	Status  int     `json:"status"`
	Tries   int     `json:"tries"`
	P50MS   float64 `json:"p50Ms"`
	P99MS   float64 `json:"p99Ms"`
	MaxMS   float64 `json:"maxMs"`
	Error   string  `json:"error,omitempty"`
}

// readBudget bounds the time spent timing one read: a read of many seconds
// is timed fewer times rather than holding the run for many minutes.
const readBudget = time.Minute

// seeded is what the seeding leaves for the reads to ask about.
type seeded struct {
	webhookIDs []string
	session    string // a portal session's id (its cookie)
	deepLog    string // a failed log from 29 days ago
	deepEvent  string // its event
	stored     int
	took       time.Duration
}

// longHistory is scenario h.
func longHistory(ctx context.Context, o Options, rcv *receiver) (*HistoryReport, error) {
	now := time.Now().UTC()
	var sd seeded
	prepare := func(ctx context.Context, dbURL, keyFile, token string) error {
		return seedStore(ctx, o, rcv, now, dbURL, keyFile, token, &sd)
	}
	fmt.Fprintf(o.Log, "bench: h: seeding %d completed logs over %d days\n", o.HistoryLogs, historyDays)
	c, err := startChildWith(ctx, o.Binary, o.Database, prepare)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	rep := &HistoryReport{Logs: o.HistoryLogs, Stored: sd.stored, Days: historyDays, SeedSeconds: sd.took.Seconds(),
		Analyzed: o.Database != "" && o.SeedAnalyze}
	fmt.Fprintf(o.Log, "bench: h: %d logs stored in %.0f s; timing the reads\n", sd.stored, sd.took.Seconds())

	deep := now.Add(-(historyDays - 1) * 24 * time.Hour).Truncate(time.Hour)
	day := deep.Format("2006-01-02")
	hook := sd.webhookIDs[0]
	q := url.QueryEscape
	// The second page's cursor, as a client paging on would have it.
	var first struct {
		Next string `json:"nextCursor"`
	}
	if _, err := c.call(ctx, "GET", "/v3/webhook-event-logs", nil, &first); err != nil {
		return nil, err
	}
	reads := []Read{
		{Surface: "api", Name: "logs, newest page", Path: "/v3/webhook-event-logs"},
		{Surface: "api", Name: "logs, second page", Path: "/v3/webhook-event-logs?cursor=" + q(first.Next)},
		{Surface: "api", Name: "logs, a page 29 days back", Path: "/v3/webhook-event-logs?cursor=" + q(sd.deepLog)},
		{Surface: "api", Name: "logs failed", Path: "/v3/webhook-event-logs?status=failed"},
		{Surface: "api", Name: "logs failed or cancelled", Path: "/v3/webhook-event-logs?status=failed&status=cancelled"},
		{Surface: "api", Name: "logs of a webhook", Path: "/v3/webhook-event-logs?webhookId=" + hook},
		{Surface: "api", Name: "logs of a webhook, failed", Path: "/v3/webhook-event-logs?webhookId=" + hook + "&status=failed"},
		{Surface: "api", Name: "logs of an event kind", Path: "/v3/webhook-event-logs?event=" + string(event.LicenseCreated)},
		{Surface: "api", Name: "logs of an event 29 days old", Path: "/v3/webhook-event-logs?eventId=" + sd.deepEvent},
		{Surface: "api", Name: "logs since/until, one hour 29 days ago", Path: "/v3/webhook-event-logs?since=" + q(deep.Format(time.RFC3339)) + "&until=" + q(deep.Add(time.Hour).Format(time.RFC3339))},
		{Surface: "api", Name: "logs since 29 days ago", Path: "/v3/webhook-event-logs?since=" + q(deep.Format(time.RFC3339))},
		{Surface: "api", Name: "logs until 29 days ago", Path: "/v3/webhook-event-logs?until=" + q(deep.Format(time.RFC3339))},
		{Surface: "api", Name: "logs of a webhook, failed, one day 29 days ago", Path: "/v3/webhook-event-logs?webhookId=" + hook + "&status=failed&since=" + q(deep.Format(time.RFC3339)) + "&until=" + q(deep.Add(24*time.Hour).Format(time.RFC3339))},
		{Surface: "api", Name: "one log 29 days old, with attempts", Path: "/v3/webhook-event-logs/" + sd.deepLog},
		{Surface: "api", Name: "webhooks (undelivered counts)", Path: "/v3/webhooks"},
		{Surface: "api", Name: "one webhook (undelivered count)", Path: "/v3/webhooks/" + hook},
		{Surface: "metrics", Name: "metrics (gauges)", Path: "/metrics"},
		{Surface: "portal", Name: "logs, newest page (count to 10,000)", Path: "/webhook-event-logs"},
		{Surface: "portal", Name: "logs, oldest page", Path: "/webhook-event-logs?oldest=1"},
		{Surface: "portal", Name: "logs, a page 29 days back", Path: "/webhook-event-logs?cursor=" + q(sd.deepLog)},
		{Surface: "portal", Name: "logs, the page after one 29 days back", Path: "/webhook-event-logs?after=" + q(sd.deepLog)},
		{Surface: "portal", Name: "logs failed", Path: "/webhook-event-logs?status=failed"},
		{Surface: "portal", Name: "logs of a webhook", Path: "/webhook-event-logs?webhook=" + hook},
		{Surface: "portal", Name: "logs of webhooks named like", Path: "/webhook-event-logs?webhook_name=" + q("bench 3")},
		{Surface: "portal", Name: "logs of an event 29 days old", Path: "/webhook-event-logs?event_id=" + sd.deepEvent},
		{Surface: "portal", Name: "logs from/to one day 29 days ago", Path: "/webhook-event-logs?from=" + day + "&to=" + day},
		{Surface: "portal", Name: "logs from 29 days ago", Path: "/webhook-event-logs?from=" + day},
		{Surface: "portal", Name: "logs to 29 days ago", Path: "/webhook-event-logs?to=" + day},
		{Surface: "portal", Name: "one log 29 days old", Path: "/webhook-event-logs/" + sd.deepLog},
		{Surface: "portal", Name: "webhooks", Path: "/webhooks"},
		{Surface: "portal", Name: "a webhook (charts, undelivered)", Path: "/webhooks/" + hook},
	}
	for i := range reads {
		r := &reads[i]
		var times []time.Duration
		began := time.Now()
		for k := 0; k <= o.HistoryReads && ctx.Err() == nil && (k < 2 || time.Since(began) < readBudget); k++ {
			t0 := time.Now()
			r.Status, err = c.get(ctx, r.Surface, r.Path, sd.session)
			if err != nil { // a time-out, say: noted, and the next read's turn
				r.Error = err.Error()
				break
			}
			if k > 0 { // the first try warms the caches
				times = append(times, time.Since(t0))
			}
		}
		r.Tries = len(times)
		sorted := sortedCopy(times)
		r.P50MS, r.P99MS = percentile(sorted, 0.50), percentile(sorted, 0.99)
		if len(sorted) > 0 {
			r.MaxMS = float64(sorted[len(sorted)-1].Microseconds()) / 1000
		}
		fmt.Fprintf(o.Log, "bench: h: %s %s: p50 %.1f ms, p99 %.1f ms (%d, %d tries) %s\n", r.Surface, r.Name, r.P50MS, r.P99MS, r.Status, r.Tries, r.Error)
	}
	rep.Reads = reads
	return rep, nil
}

// get reads path as the surface's user would: the API with the account's
// token, the portal with a session's cookie, the metrics with neither.
func (c *child) get(ctx context.Context, surface, path, session string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return 0, err
	}
	switch surface {
	case "api":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case "portal":
		req.AddCookie(&http.Cookie{Name: "herald_session", Value: session})
	}
	// A redirect is the answer (the portal's to its sign-in page would
	// otherwise be timed as the read).
	client := *c.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// seedStore makes the fresh store's account (whose API token is token), a
// portal session of its owner, its webhooks (at the receiver, though
// nothing will be sent), and the history; it notes in sd what the reads
// need.
func seedStore(ctx context.Context, o Options, rcv *receiver, now time.Time, dbURL, keyFile, token string, sd *seeded) error {
	key, _, err := secret.LoadOrCreateKeyFile(keyFile)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dbURL, store.Options{Key: key})
	if err != nil {
		return err
	}
	defer st.Close()
	a, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "bench", OwnerEmail: "bench@example.com", PasswordHash: "x", TokenHash: auth.HashToken(token)})
	if err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	var owner string
	if err := st.QueryRow(ctx, `SELECT id FROM owners WHERE account_id = ?`, a.ID).Scan(&owner); err != nil {
		return fmt.Errorf("find the owner: %w", err)
	}
	sd.session = randomHex(32)
	sum := sha256.Sum256([]byte(sd.session))
	if err := st.CreateSession(ctx, store.Session{IDHash: hex.EncodeToString(sum[:]), AccountID: a.ID, OwnerID: owner,
		CSRFToken: randomHex(16), CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(12 * time.Hour)}); err != nil {
		return err
	}
	for i := range historyWebhooks {
		w, err := st.CreateWebhook(ctx, a.ID, store.NewWebhook{Name: fmt.Sprint("bench ", i), URL: rcv.add(i, "", false),
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_" + randomHex(16)})
		if err != nil {
			return err
		}
		sd.webhookIDs = append(sd.webhookIDs, w.ID)
	}
	began := time.Now()
	h := history{accountID: a.ID, webhooks: sd.webhookIDs, logs: o.HistoryLogs, days: historyDays, now: now.Add(-time.Minute)}
	if err := h.seed(ctx, st, dbURL, o.SeedAnalyze, o.Log); err != nil {
		return err
	}
	sd.took = time.Since(began)
	if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ?`, a.ID).Scan(&sd.stored); err != nil {
		return fmt.Errorf("count the logs: %w", err)
	}
	deep := now.Add(-(historyDays - 1) * 24 * time.Hour).UnixMilli()
	// The seeded ids are of their logs' creation (idAt), so the oldest
	// failed log since deep is the first by id from deep's bound.
	if err := st.QueryRow(ctx, `SELECT id, event_id FROM webhook_event_logs WHERE account_id = ? AND status = 'failed' AND id >= ? AND created_at >= ?
ORDER BY id LIMIT 1`, a.ID, store.IDBound(time.UnixMilli(deep)), deep).Scan(&sd.deepLog, &sd.deepEvent); err != nil {
		return fmt.Errorf("find a log 29 days old: %w", err)
	}
	return nil
}
