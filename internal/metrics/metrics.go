// Package metrics owns herald's Prometheus registry and the series an
// operator watches beyond the dispatcher's own (those are in package
// delivery): API and portal requests by route and status, events fired by
// kind, suspensions, the email outbox, retention, the build, and the state
// of the database read at each scrape (the backlog and its age, webhooks by
// status, the outbox, the connection pool). Labels are bounded: routes are
// the patterns herald serves, kinds and statuses are fixed sets, and no
// series is labelled by webhook or account.
package metrics

import (
	"context"
	"database/sql"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Metrics is herald's registry with its counters. Its methods are safe for
// concurrent use; a nil *Metrics counts nothing.
type Metrics struct {
	Registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	reqDuration *prometheus.HistogramVec
	fired       *prometheus.CounterVec
	suspensions prometheus.Counter
	emails      *prometheus.CounterVec
	retention   *prometheus.CounterVec
}

// New makes the registry: the Go runtime and process collectors, the build,
// the database gauges read from st at each scrape, and herald's counters.
func New(st *store.Store, version string, log *slog.Logger) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_http_requests_total", Help: "API and portal requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		reqDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_http_request_duration_seconds", Help: "Time to answer API and portal requests, by route pattern.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15},
		}, []string{"route"}),
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_events_fired_total", Help: "Events fired by committed changes, by kind.",
		}, []string{"kind"}),
		suspensions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_webhook_suspensions_total", Help: "Webhooks suspended by this process after their failure streak.",
		}),
		emails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_emails_total", Help: "Notification emails by what became of them: sent, kept (no SMTP server), failed (a send failed; tried again) or given_up.",
		}, []string{"result"}),
		retention: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_retention_deleted_total", Help: "Rows removed by retention: completed event logs (with their attempts) and events no log refers to.",
		}, []string{"table"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "herald_build_info", Help: "Always 1; its labels name the running herald's version and Go version.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	for _, k := range event.Kinds {
		m.fired.WithLabelValues(string(k))
	}
	for _, r := range []string{"sent", "kept", "failed", "given_up"} {
		m.emails.WithLabelValues(r)
	}
	for _, t := range []string{"event_logs", "events"} {
		m.retention.WithLabelValues(t)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, m.requests, m.reqDuration, m.fired, m.suspensions, m.emails, m.retention, newDatabase(st, log))
	return m
}

// Request counts an answered API or portal request.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.reqDuration.WithLabelValues(route).Observe(d.Seconds())
}

// Fired counts the events a committed change fired.
func (m *Metrics) Fired(kinds []event.Kind) {
	if m == nil {
		return
	}
	for _, k := range kinds {
		m.fired.WithLabelValues(string(k)).Inc()
	}
}

// Suspended counts webhooks suspended.
func (m *Metrics) Suspended(n int) {
	if m != nil {
		m.suspensions.Add(float64(n))
	}
}

// Email counts what became of an email (notify.Outbox.Done).
func (m *Metrics) Email(result string) {
	if m != nil {
		m.emails.WithLabelValues(result).Inc()
	}
}

// Removed counts what a retention pass removed.
func (m *Metrics) Removed(logs, events int) {
	if m == nil {
		return
	}
	m.retention.WithLabelValues("event_logs").Add(float64(logs))
	m.retention.WithLabelValues("events").Add(float64(events))
}

// database reads the store's gauges at each scrape. Processes sharing a
// PostgreSQL database each report the same figures: aggregate them with
// max, not sum.
type database struct {
	st  *store.Store
	log *slog.Logger

	up, backlog, due, oldestDue, webhooks, emails, oldestEmail *prometheus.Desc
	conns, maxConns, waits, waited                             *prometheus.Desc
	writerBusy, writerCommits, writerTxs                       *prometheus.Desc
}

func newDatabase(st *store.Store, log *slog.Logger) *database {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &database{st: st, log: log,
		up:            d("herald_database_up", "1 when the last scrape read the database's figures, 0 when it could not."),
		backlog:       d("herald_backlog_event_logs", "Event logs not yet completed, by status: queued, retrying, pending (an attempt in flight).", "status"),
		due:           d("herald_backlog_due_event_logs", "Event logs whose attempt is due now and not in flight."),
		oldestDue:     d("herald_backlog_oldest_due_seconds", "How long the event log due longest has waited past its due time; 0 when none is due."),
		webhooks:      d("herald_webhooks", "Webhooks by status (Healthy, Unhealthy, Suspended) and whether they are enabled.", "status", "enabled"),
		emails:        d("herald_email_outbox_unsent", "Notification emails waiting in the outbox."),
		oldestEmail:   d("herald_email_outbox_oldest_seconds", "Age of the oldest email waiting in the outbox; 0 when none waits."),
		conns:         d("herald_db_connections", "Database connections of this process's pools by pool (main, or delivery: the dispatcher's own on PostgreSQL) and state: in_use or idle.", "pool", "state"),
		maxConns:      d("herald_db_connections_max", "The most connections each of this process's pools may open.", "pool"),
		waits:         d("herald_db_connection_waits_total", "Times a query waited for a free connection, by pool.", "pool"),
		waited:        d("herald_db_connection_wait_seconds_total", "Time spent waiting for a free connection, by pool.", "pool"),
		writerBusy:    d("herald_db_writer_busy_seconds_total", "SQLite: time its one writer spent running and committing transactions; a rate near 1 means writes queue for it."),
		writerCommits: d("herald_db_writer_commits_total", "SQLite: commits its one writer made, each covering a group of transactions."),
		writerTxs:     d("herald_db_writer_transactions_total", "SQLite: write transactions its one writer ran, in all its commits."),
	}
}

func (d *database) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.up, d.backlog, d.due, d.oldestDue, d.webhooks, d.emails, d.oldestEmail, d.conns, d.maxConns, d.waits, d.waited, d.writerBusy, d.writerCommits, d.writerTxs} {
		ch <- x
	}
}

func (d *database) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := d.st.Gauges(ctx)
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	// The pool's figures come from this process, whatever the database says.
	for pool, st := range map[string]sql.DBStats{"main": g.DB, "delivery": g.DeliveryDB} {
		if pool == "delivery" && st.MaxOpenConnections == 0 {
			continue // SQLite, or a pool too small to split: no pool of its own
		}
		gauge(d.conns, float64(st.InUse), pool, "in_use")
		gauge(d.conns, float64(st.Idle), pool, "idle")
		gauge(d.maxConns, float64(st.MaxOpenConnections), pool)
		ch <- prometheus.MustNewConstMetric(d.waits, prometheus.CounterValue, float64(st.WaitCount), pool)
		ch <- prometheus.MustNewConstMetric(d.waited, prometheus.CounterValue, st.WaitDuration.Seconds(), pool)
	}
	if w := g.Writer; w != nil {
		ch <- prometheus.MustNewConstMetric(d.writerBusy, prometheus.CounterValue, w.Busy.Seconds())
		ch <- prometheus.MustNewConstMetric(d.writerCommits, prometheus.CounterValue, float64(w.Commits))
		ch <- prometheus.MustNewConstMetric(d.writerTxs, prometheus.CounterValue, float64(w.Transactions))
	}
	if err != nil {
		d.log.Warn("metrics: read the database's figures", "err", err)
		gauge(d.up, 0)
		return
	}
	gauge(d.up, 1)
	for _, s := range []store.LogStatus{store.Queued, store.Retrying, store.Pending} {
		gauge(d.backlog, float64(g.Backlog[s]), string(s))
	}
	gauge(d.due, float64(g.Due))
	gauge(d.oldestDue, g.OldestDue.Seconds())
	counts := map[[2]string]int{}
	for _, h := range []store.Health{store.Healthy, store.Unhealthy, store.Suspended} {
		for _, e := range []string{"true", "false"} {
			counts[[2]string{string(h), e}] = 0
		}
	}
	for _, w := range g.Webhooks {
		counts[[2]string{string(w.Status), strconv.FormatBool(w.Enabled)}] += w.N
	}
	for k, n := range counts {
		gauge(d.webhooks, float64(n), k[0], k[1])
	}
	gauge(d.emails, float64(g.EmailsUnsent))
	gauge(d.oldestEmail, g.OldestEmail.Seconds())
}
