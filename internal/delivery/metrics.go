package delivery

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what the dispatcher does. A nil *Metrics counts nothing.
// No series has a per-webhook label: webhooks are unbounded in number, and
// a webhook's own figures are in the API and the portal.
type Metrics struct {
	attempts  *prometheus.CounterVec
	responses *prometheus.CounterVec
	failures  *prometheus.CounterVec
	duration  prometheus.Histogram
	claims    prometheus.Counter
	handed    prometheus.Counter
	queries   prometheus.Counter
	records   prometheus.Counter
	takeovers prometheus.Counter
	// claimTime and recordTime are the database's share of a delivery's
	// latency: a claim's statement, and a batch of outcomes' transaction.
	// Slots are freed only once their outcomes are recorded, so together
	// they bound how fast one webhook's deliveries can follow each other.
	claimTime  prometheus.Histogram
	recordTime prometheus.Histogram
	batchSize  prometheus.Histogram
	// A throttled webhook's wait (throttle.go): how long its deliveries
	// waited here for their send slots, how many wait now, and how many
	// were given back to the queue to wait for a later slot.
	throttleWait      prometheus.Histogram
	throttleNow       prometheus.Gauge
	throttleGivenBack prometheus.Counter
	// How long changes that fire events waited for this process's
	// deliveries to catch up (pace.go), of those that waited, and how many
	// wait now.
	paceWait prometheus.Histogram
	paceNow  prometheus.Gauge
}

// NewMetrics registers the delivery metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_attempts_total", Help: "Delivery attempts (automatic and resends; not tests) by result: succeeded or failed.",
		}, []string{"result"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_responses_total", Help: "Receivers' answers to delivery attempts by status class (2xx, 3xx, 4xx, 5xx), or none when no answer came.",
		}, []string{"class"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_failures_total", Help: "Failed delivery attempts by reason: timeout, connection, address_refused, headers_too_large, redirect, status, invalid_url, signing_key, tls, oauth2, invalid_body; a destination's also unroutable, too_large, unauthorized, throttled, not_found, refused, config.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_attempt_duration_seconds", Help: "Time from sending a delivery to its response.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
		claims:    prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_claimed_total", Help: "Event logs claimed for an attempt."}),
		handed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_handed_over_total", Help: "Event logs leased to this process's dispatcher by the transaction that fired them, attempted without a claim."}),
		queries:   prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_claim_queries_total", Help: "Claim queries made, whether or not they found due logs."}),
		records:   prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_outcomes_recorded_total", Help: "Attempt outcomes written to the database."}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_lease_takeovers_total", Help: "Attempts taken over from a process that died holding them (claimed after their lease ended, or released at start on SQLite)."}),
		claimTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_claim_duration_seconds", Help: "Time one claim of due logs takes, found or not.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
		recordTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_record_duration_seconds", Help: "Time one batch of outcomes takes to be recorded (its transaction, retries included).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_record_batch_outcomes", Help: "Outcomes recorded together in one transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		throttleWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_throttle_wait_seconds", Help: "Time a delivery to a rate-limited webhook waited in this process, from its claim to its send slot.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}),
		throttleNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_delivery_throttle_waiting", Help: "Deliveries to rate-limited webhooks waiting in this process for their send slot now.",
		}),
		throttleGivenBack: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_delivery_throttle_deferred_total", Help: "Deliveries to rate-limited webhooks given back to the queue to wait for a later send slot (not attempts).",
		}),
		paceWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_pace_wait_seconds", Help: "Time a change that fires events waited, before its transaction, for this process's deliveries to catch up (only changes that waited).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 9),
		}),
		paceNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_delivery_pace_waiting", Help: "Changes that fire events waiting now for this process's deliveries to catch up.",
		}),
	}
	for _, r := range []string{"succeeded", "failed"} {
		m.attempts.WithLabelValues(r)
	}
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx", "none"} {
		m.responses.WithLabelValues(c)
	}
	reg.MustRegister(m.attempts, m.responses, m.failures, m.duration, m.claims, m.handed, m.queries, m.records, m.takeovers,
		m.claimTime, m.recordTime, m.batchSize, m.throttleWait, m.throttleNow, m.throttleGivenBack, m.paceWait, m.paceNow)
	return m
}

func (m *Metrics) attempted(r Result) {
	if m == nil {
		return
	}
	result := "succeeded"
	if !r.OK() {
		result = "failed"
		m.failures.WithLabelValues(r.Failure).Inc()
	}
	m.attempts.WithLabelValues(result).Inc()
	class := "none"
	if r.StatusCode != nil {
		switch c := *r.StatusCode; {
		case c >= 200 && c < 600:
			class = strconv.Itoa(c/100) + "xx"
		default:
			class = "other"
		}
	}
	m.responses.WithLabelValues(class).Inc()
	m.duration.Observe(r.Duration.Seconds())
}

func (m *Metrics) claimed(n, takenOver int, took time.Duration) {
	if m == nil {
		return
	}
	m.claimTime.Observe(took.Seconds())
	m.queries.Inc()
	m.claims.Add(float64(n))
	m.takeovers.Add(float64(takenOver))
}

func (m *Metrics) handedOver(n int) {
	if m != nil {
		m.handed.Add(float64(n))
	}
}

func (m *Metrics) recorded(n int, took time.Duration) {
	if m != nil {
		m.records.Add(float64(n))
		m.recordTime.Observe(took.Seconds())
		m.batchSize.Observe(float64(n))
	}
}

// TookOver counts attempts taken over otherwise than by a claim: on SQLite,
// those a crashed predecessor left in flight, released at start.
func (m *Metrics) TookOver(n int) {
	if m != nil {
		m.takeovers.Add(float64(n))
	}
}

func (m *Metrics) throttleWaited(d time.Duration) {
	if m != nil {
		m.throttleWait.Observe(max(0, d.Seconds()))
	}
}

func (m *Metrics) throttleWaiting(n int) {
	if m != nil {
		m.throttleNow.Add(float64(n))
	}
}

func (m *Metrics) throttleDeferred() {
	if m != nil {
		m.throttleGivenBack.Inc()
	}
}

func (m *Metrics) paced(d time.Duration) {
	if m != nil {
		m.paceWait.Observe(max(0, d.Seconds()))
	}
}

func (m *Metrics) pacing(n int) {
	if m != nil {
		m.paceNow.Add(float64(n))
	}
}
