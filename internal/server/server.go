// Package server assembles a running herald: the store, the delivery
// dispatcher and its recoveries, the email outbox, retention, the reminders
// of suspended webhooks, the sharing of rate limits between processes, and
// the HTTP server with the API, the portal, health checks and metrics; and
// on an empty database, the first account. Its Config validates itself
// (Validate, naming the flags of `herald serve`). cmd/herald builds a Config
// and calls Open and Run; tests do the same in-process (heraldtest).
package server

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accesslog"
	"github.com/heraldhq/herald/internal/accounts"
	"github.com/heraldhq/herald/internal/admission"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/expiry"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/portal"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/startstop"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
	"github.com/heraldhq/herald/internal/validator"
)

// Version is herald's version when set at build time with
// -ldflags "-X github.com/heraldhq/herald/internal/server.Version=v1.2.3".
var Version = "dev"

// VersionString is Version, or the version Go stamped into the binary: the
// module version of `go install …@v1.2.3`, or for a build in a git
// checkout (Go 1.24 and later) the tag or pseudo-version of its commit, or,
// when only the commit is known, "dev+" and the commit (with "-dirty" for
// uncommitted changes). A build with no such information says "dev". The
// CLI prints it and every delivery sends it in its user-agent.
func VersionString() string {
	if Version != "dev" {
		return Version
	}
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(bi)
}

func buildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev+" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// Config is everything `herald serve` is told.
type Config struct {
	DatabaseURL  string // sqlite:herald.db
	SecretKey    []byte // seals webhook tokens; required
	Delivery     delivery.Config
	SMTPURL      string // "": emails are logged and kept
	MailFrom     string // herald@localhost
	AllowPrivate bool   // deliver to loopback and private addresses
	// AllowMetadata, with AllowPrivate, also delivers to cloud metadata
	// addresses (169.254.169.254 and the like), which are refused otherwise.
	AllowMetadata bool
	// EgressProxy, when set, is an HTTP proxy (http://[user:password@]host:port)
	// through which every delivery leaves by CONNECT (netguard.ProxyDialContext):
	// receivers see its one address. The address policy still judges each
	// receiver; the proxy's own address is exempt.
	EgressProxy string
	// SecureCookies marks portal cookies Secure over plain HTTP too, for
	// herald behind a proxy that terminates TLS.
	SecureCookies bool
	// ReadTimeout bounds the reading of each whole request, headers and
	// body, so a client that trickles a body cannot hold a connection;
	// 0 means DefaultReadTimeout. Answers are not bounded by it: a Test may
	// take up to the attempt time-out to answer.
	ReadTimeout time.Duration
	// Retention removes completed event logs older than Retention.Keep;
	// Keep 0 keeps them forever.
	Retention retention.Config
	// RateLimit is the requests per second one API token or portal session
	// may make, with bursts of twice as many: 0 means DefaultRateLimit, a
	// negative value no limit. RateLimitAnonymous is the same per client
	// address for requests without valid credentials (DefaultRateLimitAnonymous).
	// Several processes on one PostgreSQL share the counts.
	RateLimit, RateLimitAnonymous float64
	// TrustedProxies are the proxies whose X-Forwarded-For names the client.
	TrustedProxies ratelimit.Proxies
	// DeviceKey signs the portal's known-browser cookie (see portal.Config);
	// derived from SecretKey when nil.
	DeviceKey []byte
	// MetricsListener, when set, is where /metrics is served, and the only
	// place: the API's listener answers 404 for it, so the metrics can stay
	// on a private address. Run serves it beside the API and closes it at
	// the stop. When nil, /metrics is served with the API.
	MetricsListener net.Listener

	// OperatorToken authorises the operator calls (/v3/operator/); ""
	// turns them off. Never logged.
	OperatorToken string

	BootstrapEmail    string
	BootstrapPassword string
	BootstrapToken    string
	// BootstrapPasswordHash, when set with BootstrapPassword, is that
	// password already hashed (auth.HashPassword), so that Open need not
	// hash it again: tests start hundreds of heralds with one password, and
	// each hash costs about a fifth of a CPU-second by design.
	BootstrapPasswordHash string

	Logger *slog.Logger
	// Tracer starts the server span of each API and portal request and the
	// client span of each delivery POST; nil (tracing off) starts none and
	// adds nothing to a request's path.
	Tracer trace.Tracer
	// NoAccessLog leaves out the line per API and portal request that
	// Logger otherwise gets at info.
	NoAccessLog bool
	Out         io.Writer // where first-start credentials are printed

	// PublicURL is the portal's address as its users reach it, for the
	// links in emails, invitations and portal links; "": emails name the
	// page's path and say the address is not configured, and other links
	// use the address each request came to.
	PublicURL string
	// SuspendedReminder is how often the owner of a webhook that stays
	// Suspended is reminded by email; 0: never. ReminderCheck is how often
	// herald looks for reminders due (DefaultReminderCheck when 0).
	SuspendedReminder, ReminderCheck time.Duration
	// EmailCheck is how often the email outbox looks for emails nothing
	// woke it for (queued by another process, or due again after a failed
	// send): notify.DefaultInterval when 0.
	EmailCheck time.Duration
	// ExpiryCheck is the longest the expiry runner sleeps without looking
	// at the next due instant (expiry.DefaultCheck when 0); it wakes at
	// each due instant and at each change this process makes regardless.
	ExpiryCheck time.Duration

	// Now is herald's one clock (time.Now when nil), read by every part
	// that decides by the time: the store (leases, expiries, retries due,
	// rotations' ends), the dispatcher and recoveries (Delivery.Now is set
	// to it), the email outbox's back-off, retention, reminders and the
	// portal. Durations measured for metrics and logs, and rate limits
	// (requests per real second), read the time package. Tests move it to
	// make leases end, retries fall due or reminders come without waiting
	// for them; processes sharing a database share one.
	Now func() time.Time

	// BodiesInFlight bounds the bytes of request bodies being read or held
	// by requests in progress, all together; past it a request is answered
	// 503 with Retry-After. 0 means DefaultBodiesInFlight.
	BodiesInFlight int64
	// Conns bounds the inbound connections on the API's listener, in all
	// and per client address (trusted proxies exempt from the latter).
	// Zero fields are derived from the process's descriptor limit
	// (admission.ConnsFor): half of it in all, a quarter of that per
	// address.
	Conns admission.Conns
}

// Validate refuses values herald cannot run with, naming each by the flag
// of `herald serve` that sets it (and Delivery's, by delivery.Config's
// Validate); all of them at once, so that one start shows every mistake.
// Zero fields are the defaults, and valid. Open calls it.
func (c Config) Validate() error {
	var msgs []string
	if err := c.Delivery.Validate(); err != nil {
		msgs = append(msgs, err.Error())
	}
	if c.AllowMetadata && !c.AllowPrivate {
		msgs = append(msgs, "--allow-metadata-addresses needs --allow-private-networks: metadata addresses are private addresses too")
	}
	if c.EgressProxy != "" {
		if _, err := netguard.ParseProxy(c.EgressProxy); err != nil {
			msgs = append(msgs, "--egress-proxy: "+err.Error())
		}
	}
	if c.OperatorToken != "" && len(c.OperatorToken) < MinOperatorToken {
		msgs = append(msgs, fmt.Sprintf("--operator-token must be at least %d characters: it opens every account", MinOperatorToken))
	}
	// The first start's credentials are held to the rules every later
	// password and token is: a weak one would open the first account.
	if n := utf8.RuneCountInString(c.BootstrapPassword); c.BootstrapPassword != "" && (n < validator.MinPasswordLength || n > validator.MaxPasswordLength) {
		msgs = append(msgs, fmt.Sprintf("HERALD_BOOTSTRAP_PASSWORD must be %d to %d characters, as every portal password must (leave it unset to have herald make one)",
			validator.MinPasswordLength, validator.MaxPasswordLength))
	}
	if c.BootstrapToken != "" && len(c.BootstrapToken) < MinBootstrapToken {
		msgs = append(msgs, fmt.Sprintf("HERALD_BOOTSTRAP_TOKEN must be at least %d characters: it is the first account's API token (leave it unset to have herald make one)", MinBootstrapToken))
	}
	if c.SuspendedReminder < 0 {
		msgs = append(msgs, "--suspended-reminder must not be negative (0 turns reminders off)")
	}
	if err := CheckPublicURL(c.PublicURL); err != nil {
		msgs = append(msgs, "--public-url "+err.Error())
	}
	if c.Retention.Keep < 0 {
		msgs = append(msgs, "--retention must not be negative (0 keeps event logs forever)")
	}
	if c.BodiesInFlight != 0 && c.BodiesInFlight < MinBodiesInFlight {
		// MinBodiesInFlight is a whole number of MiB (api.MaxBody).
		msgs = append(msgs, fmt.Sprintf("--max-request-bodies must be at least %dMiB, the largest body the API takes", MinBodiesInFlight>>20))
	}
	if c.Conns.Total < 0 || c.Conns.PerAddress < 0 {
		msgs = append(msgs, "--max-connections and --max-connections-per-address must not be negative (0: derived from the descriptor limit)")
	}
	if c.ReadTimeout < 0 || c.ReminderCheck < 0 || c.EmailCheck < 0 {
		msgs = append(msgs, "the read time-out and the reminders' and outbox's check intervals must not be negative")
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// MinOperatorToken is the shortest operator token (--operator-token): 32
// characters of a generated secret, as `openssl rand -hex 16` prints.
const MinOperatorToken = 32

// egressLabel names the egress proxy in the serving line, its password
// masked: "direct" without one.
func egressLabel(raw string) string {
	if raw == "" {
		return "direct"
	}
	u, err := netguard.ParseProxy(raw)
	if err != nil {
		return "invalid"
	}
	return u.Redacted()
}

// MinBootstrapToken is the shortest first API token (HERALD_BOOTSTRAP_TOKEN)
// herald takes: as many characters as the operator token, a generated
// secret's. The tokens herald makes are hrld_ and 32 random characters.
const MinBootstrapToken = 32

// CheckPublicURL accepts "" or an absolute http or https URL with a host and
// nothing after its path, since emails and links append a page's path to it
// (--public-url).
func CheckPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q: want an http or https address such as https://herald.example.com", s)
	}
	return nil
}

// DefaultBodiesInFlight is the default bound on request bodies in flight:
// room for 16 bodies of the largest size the API takes at once, or
// thousands of ordinary ones (a license is a few hundred bytes), and a
// bound on what hostile bodies can make the process hold.
const DefaultBodiesInFlight = 16 << 20

// MinBodiesInFlight is the smallest bound that still lets through one body
// of the largest size the API takes.
const MinBodiesInFlight = api.MaxBody

// DefaultReminderCheck is how often herald looks for suspended webhooks
// whose reminder is due: a reminder is at most this late.
const DefaultReminderCheck = time.Minute

// DefaultReadTimeout is how long a client has to send a whole request.
const DefaultReadTimeout = 30 * time.Second

// Default rate limits, per second: a platform's backend calling the API with
// its token gets room for its peaks; a client without credentials, what a
// person in a browser needs and little more.
const (
	DefaultRateLimit          = 1000
	DefaultRateLimitAnonymous = 20
)

// Server is a running herald.
type Server struct {
	cfg   Config
	Store *store.Store
	// Queue is the store's event pipeline, shared by every part.
	Queue      *queue.Queue
	Dispatcher *delivery.Dispatcher
	// Expiries fires license.expiring-soon and license.expired on time.
	Expiries *expiry.Runner
	outbox   *notify.Outbox
	limits   ratelimit.Limits
	handler  http.Handler
	bodies   *admission.Bodies
	metrics  http.Handler // nil when /metrics is served with the API
	log      *slog.Logger
	// destinations keeps the brokers' clients open between attempts.
	destinations *destination.Router
}

// Open opens the store, assembles the parts and, last, creates the first
// account on an empty database, printing its credentials; nothing runs until
// Run. The credentials are printed once, so a caller binds its listeners
// before Open: a start that cannot serve then creates no account.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.MailFrom = cmp.Or(cfg.MailFrom, "herald@localhost")
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// The metrics need the store and the store reports to the metrics: m is
	// set before anything can fire.
	var m *metrics.Metrics
	// Likewise the outbox, woken by the store when a warning is queued.
	var outbox *notify.Outbox
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{Key: cfg.SecretKey, Logger: log, Now: cfg.Now,
		OnFired: func(kinds []event.Kind) { m.Fired(kinds) },
		OnEmail: func() {
			if outbox != nil {
				outbox.Wake()
			}
		}})
	if err != nil {
		return nil, err
	}
	m = metrics.New(st, VersionString(), log)
	reg := m.Registry
	dm := delivery.NewMetrics(reg)
	s := &Server{cfg: cfg, Store: st, Queue: queue.New(st), log: log}
	if st.Engine() == "sqlite" {
		// This process holds the database's lock, so any lease left is a
		// crashed predecessor's: its attempts are made again now.
		if n, err := s.Queue.ReleaseLeases(ctx); err != nil {
			st.Close()
			return nil, err
		} else if n > 0 {
			log.Warn("attempts left in flight by a previous run are due again", "logs", n)
			dm.TookOver(int(n))
		}
		// Likewise a recovery it was running resumes now.
		if err := s.Queue.ReleaseRecoveries(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	var sender *notify.Sender
	if cfg.SMTPURL != "" {
		if sender, err = notify.NewSender(cfg.SMTPURL, cfg.MailFrom); err != nil {
			st.Close()
			return nil, fmt.Errorf("smtp: %w", err)
		}
	} else {
		log.Warn("notification emails are not being sent: no --smtp-url; they are kept, and shown in the portal's Settings and by herald emails list")
	}
	s.outbox = notify.NewOutbox(st, sender, log)
	outbox = s.outbox
	s.outbox.Done = m.Email
	s.outbox.Interval = cfg.EmailCheck
	s.outbox.PublicURL = cfg.PublicURL
	s.cfg.Retention.Removed = m.Removed

	policy := netguard.Policy{AllowPrivate: cfg.AllowPrivate, AllowMetadata: cfg.AllowMetadata, Resolver: net.DefaultResolver}
	dc := cfg.Delivery
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dc.Dial = policy.DialContext(dialer)
	if cfg.EgressProxy != "" {
		proxy, err := netguard.ParseProxy(cfg.EgressProxy) // Validate passed it
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("--egress-proxy: %w", err)
		}
		dc.Dial = policy.ProxyDialContext(dialer, proxy)
	}
	dc.UserAgent = "herald/" + VersionString()
	dc.Logger = log
	dc.Metrics = dm
	dc.Tracer = cfg.Tracer
	dc.Now = st.Now // one clock for the leases the dispatcher writes and the store compares
	if st.Engine() == "sqlite" {
		dc.Recorders = 1 // one writer: concurrent recordings would only queue for it
	}
	dc.OnSuspend = func(sp []store.Suspension) {
		for _, x := range sp {
			log.Warn("webhook suspended", "account", x.AccountID, "webhook", x.WebhookID)
		}
		m.Suspended(len(sp))
		s.outbox.Wake()
	}
	// Destinations' attempts dial their brokers through the same guard as
	// the receivers' (decision 0133).
	s.destinations = destination.NewRouter(types.All(), st.WebhookDestination,
		destination.Env{Dial: dc.Dial, Timeout: cmp.Or(dc.AttemptTimeout, delivery.DefaultAttemptTimeout)}, st.Now)
	dc.Destinations = s.destinations
	s.Dispatcher = delivery.New(s.Queue.ForDelivery(), dc)
	// On PostgreSQL what this process fires is handed to its dispatcher
	// when it has room, without a claim (decision 0105).
	st.SetHandoff(s.Dispatcher)
	// On PostgreSQL several firing transactions at once (their claims pass
	// over each other's rows) keep the server busy while each waits on its
	// round trips and commit, when more than a batch is due. On SQLite two:
	// while one batch runs in the one writer the next waits, ahead of the
	// other writes (store.WithPrecedence), so each group the writer commits
	// has a batch in it rather than every other one (decision 0102).
	expiryWorkers := 2
	if st.Engine() == "postgres" {
		expiryWorkers = 4
	}
	s.Expiries = expiry.New(licensing.New(st), expiry.Config{Now: st.Now, Changed: st.ExpiriesWait,
		Check: cfg.ExpiryCheck, Batch: licensing.ExpiryBatch, Workers: expiryWorkers, Logger: log})

	tokenRate, anonRate := rate(cfg.RateLimit, DefaultRateLimit), rate(cfg.RateLimitAnonymous, DefaultRateLimitAnonymous)
	s.limits = ratelimit.Limits{
		Token:     ratelimit.New(tokenRate, max(2, int(2*tokenRate))),
		Anonymous: ratelimit.New(anonRate, max(2, int(2*anonRate))),
		Accounts:  ratelimit.NewAccounts(),
		Proxies:   cfg.TrustedProxies,
	}
	deviceKey := cfg.DeviceKey
	if deviceKey == nil {
		m := hmac.New(sha256.New, cfg.SecretKey)
		m.Write([]byte("herald portal known-browser cookie"))
		deviceKey = m.Sum(nil)
	}
	mux := http.NewServeMux()
	mux.Handle("/v3/", api.New(api.Config{Store: st, Queue: s.Queue, Dispatcher: s.Dispatcher, Policy: policy, Logger: log, Limits: s.limits,
		OperatorToken: cfg.OperatorToken, PublicURL: cfg.PublicURL}))
	mux.Handle("/", portal.New(portal.Config{Store: st, Queue: s.Queue, Dispatcher: s.Dispatcher, Policy: policy, Logger: log, EmailsKept: cfg.SMTPURL == "",
		SecureCookies: cfg.SecureCookies, Limits: s.limits, DeviceKey: deviceKey, PublicURL: cfg.PublicURL, Now: st.Now}))
	// Like every call of the reference, these refuse query parameters they
	// do not take.
	mux.Handle("GET /healthz", api.KnownQuery(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })))
	mux.Handle("GET /readyz", api.KnownQuery(http.HandlerFunc(s.ready)))
	if scrape := api.KnownQuery(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})); cfg.MetricsListener != nil {
		// Without this the portal's catch-all would answer for /metrics.
		mux.Handle("/metrics", http.NotFoundHandler())
		alone := http.NewServeMux()
		alone.Handle("GET /metrics", scrape)
		s.metrics = alone
	} else {
		mux.Handle("GET /metrics", scrape)
	}
	var access *slog.Logger
	if !cfg.NoAccessLog {
		access = log
	}
	// Probes and scrapes come every few seconds and say nothing new.
	infra := func(r *http.Request) bool {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			return true
		}
		return false
	}
	var h http.Handler = mux
	if cfg.Tracer != nil {
		h = tracing.Handler(mux, cfg.Tracer, infra)
	}
	s.bodies = admission.NewBodies(cmp.Or(cfg.BodiesInFlight, DefaultBodiesInFlight))
	h = s.bodies.Handler(h)
	s.handler = accesslog.Handler(h, accesslog.Options{Log: access, Observe: m.Request, Skip: infra})
	// Last, so that nothing after it can fail a start whose credentials
	// have been printed.
	if err := s.bootstrap(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return s, nil
}

// rate is a configured rate, or def when it is 0; a negative one is off (0).
func rate(configured, def float64) float64 {
	switch {
	case configured == 0:
		return def
	case configured < 0:
		return 0
	}
	return configured
}

// rateLabel shows a limit in the start line.
func rateLabel(l *ratelimit.Limiter) string {
	if l == nil {
		return "off"
	}
	return strconv.FormatFloat(l.Rate(), 'f', -1, 64) + "/s"
}

// remind queues the reminders of suspended webhooks as they fall due, until
// ctx is done. Each reminder is claimed in the database, so several
// processes send each one once.
func (s *Server) remind(ctx context.Context) {
	if s.cfg.SuspendedReminder <= 0 {
		return
	}
	startstop.Every(ctx, cmp.Or(s.cfg.ReminderCheck, DefaultReminderCheck), func() {
		if n, err := s.Store.RemindSuspended(ctx, s.Store.Now(), s.cfg.SuspendedReminder); err != nil {
			if ctx.Err() == nil {
				s.log.Error("queue reminders of suspended webhooks", "err", err)
			}
		} else if n > 0 {
			s.log.Info("reminders of suspended webhooks queued", "webhooks", n)
		}
	})
}

// warnCertificates queues the warnings of webhooks' client certificates
// about to expire (store.WarnExpiringCertificates), looking as often as
// for reminders; each is marked in the database, so several processes send
// each once.
func (s *Server) warnCertificates(ctx context.Context) {
	startstop.Every(ctx, cmp.Or(s.cfg.ReminderCheck, DefaultReminderCheck), func() {
		if n, err := s.Store.WarnExpiringCertificates(ctx, s.Store.Now()); err != nil {
			if ctx.Err() == nil {
				s.log.Error("queue warnings of expiring client certificates", "err", err)
			}
		} else if n > 0 {
			s.log.Info("warnings of expiring client certificates queued", "webhooks", n)
		}
	})
}

// QueueVacuumEvery is how often a process vacuums delivery_queue on
// PostgreSQL (queue.Vacuum: its statistics, and its empty end given
// back), and QueueVacuumChurn after how many of its rows rewritten or
// deleted here (queue.Churn) it reclaims their dead versions between
// (queue.Reclaim), looking every QueueVacuumCheck. Every claim steps
// over the dead row versions at the front of each webhook's due range: at
// 1,000 deliveries a second, claims read 112-148 buffers each with 20,000
// churned between vacuums and 53-71 with 2,000 (decision 0103). A reclaim
// of a queue of a few thousand live rows takes milliseconds.
const (
	QueueVacuumEvery = time.Minute
	QueueVacuumChurn = 2_000
	QueueVacuumCheck = time.Second
)

// vacuumQueue runs queue.Vacuum every QueueVacuumEvery and
// queue.Reclaim between once QueueVacuumChurn rows were churned, and
// store.AnalyzeStale every QueueVacuumEvery, until ctx is done.
func (s *Server) vacuumQueue(ctx context.Context) {
	// The first look analyses what is stale already (a database that ran
	// without autovacuum before this start).
	vacuumed, lastChurn, analysed := time.Now(), s.Queue.Churn(), time.Time{}
	startstop.Every(ctx, QueueVacuumCheck, func() {
		churn := s.Queue.Churn()
		switch {
		case time.Since(vacuumed) >= QueueVacuumEvery:
			vacuumed, lastChurn = time.Now(), churn
			if err := s.Queue.Vacuum(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("vacuum the delivery queue", "err", err)
			}
		case churn-lastChurn >= QueueVacuumChurn:
			lastChurn = churn
			if err := s.Queue.Reclaim(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("reclaim the delivery queue's dead rows", "err", err)
			}
		}
		// Once a minute, the other tables as autovacuum would analyse them,
		// where it is off (store.AnalyzeStale).
		if time.Since(analysed) >= QueueVacuumEvery {
			analysed = time.Now()
			if tables, err := s.Store.AnalyzeStale(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("analyse changed tables", "err", err)
			} else if len(tables) > 0 {
				s.log.Debug("analysed changed tables", "tables", tables)
			}
		}
	})
}

// PartitionsEvery is how often the server makes the history's day
// partitions ahead on PostgreSQL (store.MakePartitionsAhead): hourly, so a
// week ahead is never nearer than six days and twenty-three hours.
const PartitionsEvery = time.Hour

// makePartitions runs store.MakePartitionsAhead every PartitionsEvery until
// ctx is done (the store made them at open too).
func (s *Server) makePartitions(ctx context.Context) {
	startstop.Every(ctx, PartitionsEvery, func() {
		if err := s.Store.MakePartitionsAhead(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("make the history's partitions ahead; rows go to the default partition until they are", "err", err)
		}
	})
}

// Handler is the whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Store.Ping(ctx); err != nil {
		http.Error(w, "not ready: database unreachable", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}

// bootstrap creates the first account on an empty database, printing once
// whatever credential it had to generate.
func (s *Server) bootstrap(ctx context.Context) error {
	email := cmp.Or(s.cfg.BootstrapEmail, "owner@herald.localhost")
	c, created, err := accounts.CreateFirst(ctx, s.Store, accounts.New{Name: "My account", OwnerEmail: email,
		Password: s.cfg.BootstrapPassword, PasswordHash: s.cfg.BootstrapPasswordHash, APIToken: s.cfg.BootstrapToken})
	if err != nil || !created {
		return err
	}
	out := s.cfg.Out
	if out == nil {
		out = io.Discard
	}
	fmt.Fprintf(out, "herald: created the first account; its owner signs in as %s\n", email)
	if c.GeneratedPassword {
		fmt.Fprintf(out, "herald: portal password (shown once): %s\n", c.OwnerPassword)
	}
	if c.GeneratedToken {
		fmt.Fprintf(out, "herald: API token (shown once): %s\n", c.APIToken)
	}
	return nil
}

// Run serves the API on ln (and /metrics on Config.MetricsListener when
// set) and delivers until ctx is done, then shuts down: the listeners close,
// requests in progress finish, attempts in flight finish and are recorded,
// and the store closes.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	// ReadTimeout cuts a request whose body has not arrived in time; Go
	// lifts the deadline once the body is read, so slow answers are not cut.
	ln, conns := s.limitConns(ln)
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: cmp.Or(s.cfg.ReadTimeout, DefaultReadTimeout), IdleTimeout: 120 * time.Second}
	// Every background service starts and stops on one pattern
	// (internal/startstop): the stop below ends each and waits for all.
	services := append(s.limitServices(),
		startstop.New(s.remind),
		startstop.New(s.warnCertificates),
		startstop.New(s.Dispatcher.Run),
		startstop.New(s.Dispatcher.RunRecoveries),
		startstop.New(s.outbox.Run),
		startstop.New(s.Expiries.Run),
		startstop.New(s.vacuumQueue),
		startstop.New(s.makePartitions),
		startstop.New(s.expirePulls),
		startstop.New(func(ctx context.Context) {
			// Always: with Keep 0 (logs kept forever) it still removes
			// expired idempotency keys.
			rc := s.cfg.Retention
			rc.Logger = cmp.Or(rc.Logger, s.log)
			retention.Run(ctx, s.Store, rc)
		}))
	if err := services.Start(ctx); err != nil {
		return fmt.Errorf("start the background services: %w", err)
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var metricsSrv *http.Server
	metricsAddr := ln.Addr().String() // where /metrics is, for the start line
	if s.metrics != nil {
		metricsSrv = &http.Server{Handler: s.metrics, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
		metricsAddr = s.cfg.MetricsListener.Addr().String()
		go func() { errc <- metricsSrv.Serve(s.cfg.MetricsListener) }()
	}
	dc := s.Dispatcher.Config()
	s.log.Info("herald serving", "addr", ln.Addr().String(), "metrics_addr", metricsAddr, "database", s.Store.Engine(), "version", VersionString(),
		"retention", retention.FormatDuration(s.cfg.Retention.Keep), "response_body_limit", max(0, s.Dispatcher.Config().ResponseBodyLimit),
		"rate_limit", rateLabel(s.limits.Token), "rate_limit_anonymous", rateLabel(s.limits.Anonymous),
		"connections", conns.Total, "connections_per_address", conns.PerAddress, "bodies_in_flight", s.bodies.Limit(),
		// The delivery settings in force: what a receiver on loopback, a
		// slow retry or an early suspension comes from.
		"allow_private_networks", s.cfg.AllowPrivate, "max_attempts", dc.MaxAttempts, "retry_interval", dc.RetryInterval.String(),
		"attempt_timeout", dc.AttemptTimeout.String(), "suspend_after", dc.SuspendAfter, "egress_proxy", egressLabel(s.cfg.EgressProxy))
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("herald stopping: no new requests; attempts in flight finish and are recorded")
	case err = <-errc:
		s.log.Error("herald stopping: the listener failed", "err", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.Dispatcher.Config().AttemptTimeout+5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	if metricsSrv != nil {
		metricsSrv.Shutdown(shutdown)
	}
	services.Stop()
	s.destinations.Close()
	s.Store.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	s.log.Info("herald stopped")
	return err
}
