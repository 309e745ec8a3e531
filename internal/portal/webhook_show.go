package portal

import (
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// latestLogs is how many event logs a webhook's page shows.
const latestLogs = 10

type webhookData struct {
	Webhook store.Webhook
	Token   string // shown after Reveal, else ""
	// NextToken is the rotation's next token, shown after Reveal during a
	// rotation, else "".
	NextToken string
	Overlaps  []rotationOverlap
	Error     string // why the last action changed nothing
	Success   successChart
	Latency   latencyChart
	Logs      []logRow
	// Recovery: shown while the webhook is not Healthy, or a recovery of
	// it is recent.
	Recovery recovery
	// SuspendAfter is how many failed events in a row suspend a webhook.
	SuspendAfter int
	// Retry is the retry policy it follows; OwnRetry says it is its own.
	Retry    store.RetryPolicy
	OwnRetry bool
	// Waiting is, for a throttled webhook, how many of its logs wait for
	// an attempt (at most maxWaitingShown; see WaitingMore).
	Waiting     int
	WaitingMore bool
	// PullToken is a pull token just made for this pull webhook, shown
	// this once; "" otherwise.
	PullToken string
}

// maxWaitingShown bounds the count of a throttled webhook's waiting logs:
// past it the page says "10,000 or more", and the count's cost stays
// bounded however deep the backlog.
const maxWaitingShown = 10000

// webhook shows a webhook: its settings, charts of its recent attempts, and
// its latest event logs.
func (h *handler) webhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d, err := h.webhookData(r, s)
	if err != nil {
		return err
	}
	f := flashFrom(r.Context())
	d.Error = f.Error
	if f.PullToken {
		d.PullToken = f.Secret
	}
	if f.Reveal {
		tokens, err := h.store.WebhookTokens(r.Context(), s.AccountID, d.Webhook.ID)
		if err != nil {
			return err
		}
		d.Token, d.NextToken = tokens.Current, tokens.Next
	}
	return h.render(w, r, http.StatusOK, "webhook", d)
}

// revealToken asks the webhook's page to show its signing token once. It
// is a POST answered with a redirect, so the token never sits in a URL, a
// history entry or a flash (the page reads it), and the page is not cached.
func (h *handler) revealToken(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := h.store.MarkIdempotencyApplied(r.Context()); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+hook.ID, flash{Reveal: true})
}

func (h *handler) webhookData(r *http.Request, s store.Session) (webhookData, error) {
	ctx := r.Context()
	hook, err := h.store.Webhook(ctx, s.AccountID, r.PathValue("id"))
	if err != nil {
		return webhookData{}, err
	}
	d := webhookData{Webhook: hook, Overlaps: rotationOverlaps, SuspendAfter: h.suspendAfter, Retry: h.retry}
	if hook.RetryPolicy != nil {
		d.Retry, d.OwnRetry = *hook.RetryPolicy, true
	}
	if d.Recovery, err = h.recoveryData(r, s, hook); err != nil {
		return webhookData{}, err
	}
	if hook.RateLimit > 0 {
		if d.Waiting, err = h.queue.WaitingLogs(ctx, s.AccountID, hook.ID, maxWaitingShown+1); err != nil {
			return webhookData{}, err
		}
		if d.WaitingMore = d.Waiting > maxWaitingShown; d.WaitingMore {
			d.Waiting = maxWaitingShown
		}
	}
	now := h.now()
	since := now.Truncate(time.Hour).Add(-(successHours - 1) * time.Hour)
	hours, err := h.store.AttemptsByHour(ctx, s.AccountID, hook.ID, since)
	if err != nil {
		return webhookData{}, err
	}
	d.Success = newSuccessChart(since, hours)
	points, err := h.store.LatestAttempts(ctx, s.AccountID, hook.ID, now.Add(-latencyWindow), latencyPoints)
	if err != nil {
		return webhookData{}, err
	}
	d.Latency = newLatencyChart(points)
	logs, _, err := h.store.Logs(ctx, s.AccountID, store.LogFilter{WebhookID: hook.ID, Page: store.Page{Limit: latestLogs}})
	if err != nil {
		return webhookData{}, err
	}
	for _, l := range logs {
		d.Logs = append(d.Logs, logRow{EventLog: l, WebhookName: hook.Name})
	}
	return d, nil
}
