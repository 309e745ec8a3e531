package delivery

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the dispatcher does. A nil *Metrics counts nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
	claims   prometheus.Counter
	queries  prometheus.Counter
	records  prometheus.Counter
}

// NewMetrics registers the delivery metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_attempts_total", Help: "Delivery attempts by result (succeeded or failed).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_delivery_attempt_duration_seconds", Help: "Time from sending a delivery to its response.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
		claims:  prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_claimed_total", Help: "Event logs claimed for an attempt."}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_claim_queries_total", Help: "Claim queries made, whether or not they found due logs."}),
		records: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_delivery_outcomes_recorded_total", Help: "Attempt outcomes written to the database."}),
	}
	reg.MustRegister(m.attempts, m.duration, m.claims, m.queries, m.records)
	return m
}

func (m *Metrics) attempted(r Result) {
	if m == nil {
		return
	}
	result := "succeeded"
	if !r.OK() {
		result = "failed"
	}
	m.attempts.WithLabelValues(result).Inc()
	m.duration.Observe(r.Duration.Seconds())
}

func (m *Metrics) claimed(n int) {
	if m == nil {
		return
	}
	m.queries.Inc()
	m.claims.Add(float64(n))
}

func (m *Metrics) recorded(n int) {
	if m != nil {
		m.records.Add(float64(n))
	}
}
