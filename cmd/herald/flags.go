package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/admission"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/server"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/tracing"
)

// envFlags registers flags whose defaults come from environment variables,
// so a flag on the command line beats the variable, which beats the default.
type envFlags struct {
	fs   *flag.FlagSet
	errs []error

	// What -h prints: flags in the order registered, under the group
	// current when each was, with its variable and built-in default.
	group string
	order []string
	about map[string]flagAbout

	// synopsis replaces "NAME [flags]" on help's first line (herald logs
	// show ID); summary, when set, follows it.
	synopsis, summary string

	// checks read what the flags say (JSON, required flags) once they are
	// parsed, before any call is made: a mistake on the command line is
	// answered as one (exit 2), not as the API's refusal.
	checks []func() error
	pos    []string // the positional arguments, for the checks of a verb
}

// check adds a check of the parsed flags; a usageError it returns exits 2.
func (e *envFlags) check(fn func() error) { e.checks = append(e.checks, fn) }

// runChecks runs the checks in order and returns the first failure.
func (e *envFlags) runChecks() error {
	for _, fn := range e.checks {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

type flagAbout struct {
	group, env, def string
}

// Group starts a heading of -h: the flags registered next come under it.
func (e *envFlags) Group(name string) { e.group = name }

func (e *envFlags) note(name, env, def string) {
	if e.about == nil {
		e.about = map[string]flagAbout{}
	}
	e.order = append(e.order, name)
	e.about[name] = flagAbout{group: e.group, env: env, def: def}
}

// usage prints the flags as the README writes them: --name VALUE, grouped,
// each with its help, its environment variable and its default.
func (e *envFlags) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s [flags]\n", cmpOr(e.synopsis, e.fs.Name()))
	if e.summary != "" {
		fmt.Fprintf(w, "\n%s\n", e.summary)
	}
	seen := map[string]bool{}
	var groups []string
	byGroup := map[string][]string{}
	for _, name := range e.order {
		g := e.about[name].group
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], name)
		seen[name] = true
	}
	e.fs.VisitAll(func(f *flag.Flag) { // flags of the command alone, no variable
		if !seen[f.Name] {
			if _, ok := byGroup[""]; !ok {
				groups = append(groups, "")
			}
			byGroup[""] = append(byGroup[""], f.Name)
			e.about[f.Name] = flagAbout{def: f.DefValue}
		}
	})
	if i := slices.Index(groups, ""); i > 0 { // the command's own flags first
		groups = append([]string{""}, slices.Delete(groups, i, i+1)...)
	}
	for _, g := range groups {
		fmt.Fprintln(w)
		if g != "" {
			fmt.Fprintln(w, g+":")
		}
		for _, name := range byGroup[g] {
			f, a := e.fs.Lookup(name), e.about[name]
			kind, help := flag.UnquoteUsage(f)
			if kind != "" {
				kind = " " + strings.ToUpper(kind)
			}
			fmt.Fprintf(w, "  --%s%s\n      %s\n", name, kind, help)
			var meta []string
			if a.env != "" {
				meta = append(meta, "$"+a.env)
			}
			if a.def != "" && a.def != "false" && a.def != "0" {
				meta = append(meta, "default "+a.def)
			}
			if len(meta) > 0 {
				fmt.Fprintf(w, "      %s\n", strings.Join(meta, ", "))
			}
		}
	}
}

// given says whether the flag was set on the command line or through its
// variable, rather than left at its default.
func (e *envFlags) given(name, env string) bool {
	if _, ok := os.LookupEnv(env); ok {
		return true
	}
	set := false
	e.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (e *envFlags) env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func (e *envFlags) String(name, env, def, help string) *string {
	e.note(name, env, def)
	return e.fs.String(name, e.env(env, def), help)
}

func (e *envFlags) Duration(name, env string, def time.Duration, help string) *time.Duration {
	d := durationValue(def)
	if def != 0 {
		e.note(name, env, shortDuration(def))
	} else {
		e.note(name, env, "")
	}
	if v, ok := os.LookupEnv(env); ok {
		if err := d.Set(v); err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s %q: %w", env, v, err))
		}
	}
	// The backquotes make -h name the value "duration", as it does for the
	// flag package's own duration flags.
	e.fs.Var(&d, name, help+", a `duration` such as 90s, 5m or 1h30m")
	return (*time.Duration)(&d)
}

// shortDuration writes 5m and 1h, not 5m0s and 1h0m0s, as the README does.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// maxDurationHours is the most whole hours a time.Duration holds (about
// 292 years).
const maxDurationHours = math.MaxInt64 / int64(time.Hour)

// durationValue is a duration flag whose error says what is allowed:
// time.ParseDuration calls a duration too long for time.Duration merely
// invalid, and the flag package adds only "parse error".
type durationValue time.Duration

func (d *durationValue) Set(text string) error {
	v, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("want a duration such as 15s, 5m or 1h30m, at most %dh", maxDurationHours)
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

func (e *envFlags) Int(name, env string, def int, help string) *int {
	n := def
	e.note(name, env, strconv.Itoa(def))
	if v, ok := os.LookupEnv(env); ok {
		p, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s: not a whole number", env))
		}
		n = p
	}
	return e.fs.Int(name, n, help)
}

func (e *envFlags) Bool(name, env string, def bool, help string) *bool {
	b := def
	e.note(name, env, strconv.FormatBool(def))
	if v, ok := os.LookupEnv(env); ok {
		p, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s: not true or false", env))
		}
		b = p
	}
	return e.fs.Bool(name, b, help)
}

// storeFlags are the flags every command that opens the database takes.
type storeFlags struct {
	database, secretKey, secretKeyFile *string
}

func addStoreFlags(e *envFlags) storeFlags {
	return storeFlags{
		database:      e.String("database", "HERALD_DATABASE_URL", "sqlite:herald.db", "database URL: sqlite:PATH, or postgres://… for PostgreSQL"),
		secretKey:     e.String("secret-key", "HERALD_SECRET_KEY", "", "base64 32-byte key sealing webhook tokens at rest (default: read or create the key file)"),
		secretKeyFile: e.String("secret-key-file", "HERALD_SECRET_KEY_FILE", "", "key file used when no key is given (default: the SQLite file's path + .key, or ./herald.key)"),
	}
}

// key returns the server key: given, or read from (or created in) a file.
func (f storeFlags) key(stderr io.Writer) ([]byte, error) {
	if *f.secretKey != "" {
		return secret.ParseKey(*f.secretKey)
	}
	path := f.keyPath()
	key, created, err := secret.LoadOrCreateKeyFile(path)
	if created {
		fmt.Fprintf(stderr, "herald: created secret key file %s; keep it with the database (back it up), or set HERALD_SECRET_KEY\n", path)
	}
	return key, err
}

// keyPath is the key file read when no key is given: --secret-key-file, or
// the SQLite file's path + .key, or ./herald.key.
func (f storeFlags) keyPath() string {
	path := *f.secretKeyFile
	if path == "" {
		path = "herald.key"
		if p, ok := strings.CutPrefix(*f.database, "sqlite:"); ok {
			path = p + ".key"
		}
	}
	return filepath.Clean(path)
}

// usageError is a command line herald cannot read: main prints it on one
// line with a hint, not the whole usage, and exits 2.
type usageError struct {
	cmd string // "herald serve"
	err error
}

func (u usageError) Error() string {
	// The flag package names flags with one dash; herald's docs use two.
	msg := strings.NewReplacer("not defined: -", "not defined: --", "for flag -", "for flag --").Replace(u.err.Error())
	msg = strings.Replace(msg, "not defined: ---", "not defined: --", 1)
	return fmt.Sprintf("%s: %s\nRun '%s --help' for usage.", u.cmd, msg, u.cmd)
}

func parse(e *envFlags, args []string) error {
	// The flag package prints the whole usage after any error; only -h
	// should, so it prints nothing and the error goes back to main.
	out := e.fs.Output()
	e.fs.SetOutput(io.Discard)
	e.fs.Usage = func() {}
	err := e.fs.Parse(args)
	e.fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		e.usage(out)
		return err
	case err != nil:
		return usageError{e.fs.Name(), err}
	case e.fs.NArg() > 0:
		return usageError{e.fs.Name(), fmt.Errorf("unexpected argument %q", e.fs.Arg(0))}
	}
	return errors.Join(e.errs...)
}

// serve is `herald serve`: read the flags into a server.Config (which
// refuses bad values, naming the flag), then open herald and run it until
// ctx is done.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	setMemoryLimit(f.e, f.memoryBytes)
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	if err := store.CheckURL(cfg.DatabaseURL); err != nil {
		return err
	}
	// The listeners are bound before anything else is made: a port in use
	// must stop herald before a key file, a database or the first account
	// (whose credentials are printed only once) exists.
	ln, metricsLn, err := bindListeners(*f.addr, *f.metricsAddr)
	if err != nil {
		return err
	}
	defer ln.Close() // closing again after Run is harmless
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	if cfg.SecretKey, err = f.store.key(stderr); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	// Tracing is configured by the standard OTEL_ variables alone, as every
	// OpenTelemetry SDK is, so herald's own flags do not repeat them.
	tp, err := tracing.FromEnv(ctx, os.Getenv, server.VersionString())
	if err != nil {
		return err
	}
	defer func() {
		// After Run: the spans of the last attempts are exported before exit.
		flush, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(flush); err != nil {
			log.Warn("spans not exported", "err", err)
		}
	}()
	cfg.Logger, cfg.Out, cfg.Tracer, cfg.MetricsListener = log, stdout, tp.Tracer(), metricsLn
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx, ln)
}

// serveFlags are the flags of `herald serve`, each with its variable.
type serveFlags struct {
	e                                                                                                                                                        *envFlags
	store                                                                                                                                                    storeFlags
	addr, metricsAddr, smtpURL, mailFrom, publicURL, operatorToken, keep, bodyLimit, logLevel, logFormat, bodies, memLimit, proxies, cpuProfile, egressProxy *string
	timeout, interval, reminder, lease                                                                                                                       *time.Duration
	maxAttempts, suspendAfter, concurrency, perWebhook, rateLimit, rateAnon, maxConns, maxConnsAddr                                                          *int
	secureCookies, allowPrivate, allowMetadata, accessLog                                                                                                    *bool
	memoryBytes                                                                                                                                              int64 // --memory-limit, read by config
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	e := &envFlags{fs: flag.NewFlagSet("herald serve", flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	f := &serveFlags{e: e}
	e.Group("Server")
	f.addr = e.String("addr", "HERALD_ADDR", "127.0.0.1:8080", "address the API listens on")
	f.metricsAddr = e.String("metrics-addr", "HERALD_METRICS_ADDR", "", "address /metrics is served on, alone (default: on --addr with the API)")
	e.Group("Database and keys")
	f.store = addStoreFlags(e)
	e.Group("Delivery")
	f.timeout = e.Duration("attempt-timeout", "HERALD_ATTEMPT_TIMEOUT", 15*time.Second, "time-out of one delivery attempt")
	f.maxAttempts = e.Int("max-attempts", "HERALD_MAX_ATTEMPTS", 5, "attempts per event, the first included")
	f.interval = e.Duration("retry-interval", "HERALD_RETRY_INTERVAL", 5*time.Minute, "time between attempts")
	f.suspendAfter = e.Int("suspend-after", "HERALD_SUSPEND_AFTER", 50, "most recent completed events that must all have failed to suspend a webhook")
	f.egressProxy = e.String("egress-proxy", "HERALD_EGRESS_PROXY", "", "an HTTP proxy, http://[user:password@]host:port, through which every delivery leaves by CONNECT, so receivers can allow its one address; the address guard still judges each receiver (default: deliveries connect directly)")
	e.Group("Email")
	f.smtpURL = e.String("smtp-url", "HERALD_SMTP_URL", "", "SMTP server for notification emails, smtp://user:pass@host:port (default: emails are logged and kept)")
	f.mailFrom = e.String("mail-from", "HERALD_MAIL_FROM", "herald@localhost", "From address of notification emails")
	f.publicURL = e.String("public-url", "HERALD_PUBLIC_URL", "", "the portal's address as its users reach it, e.g. https://herald.example.com, for the links in emails, invitations and portal links (default: emails name the page's path only; other links use the address each request came to)")
	f.reminder = e.Duration("suspended-reminder", "HERALD_SUSPENDED_REMINDER", 7*24*time.Hour, "remind the account by email this often while a webhook stays suspended (0: never)")
	e.Group("Security")
	f.secureCookies = e.Bool("secure-cookies", "HERALD_SECURE_COOKIES", false, "mark portal cookies Secure even over plain HTTP, for herald behind a proxy that terminates TLS (over TLS they always are)")
	f.allowPrivate = e.Bool("allow-private-networks", "HERALD_ALLOW_PRIVATE_NETWORKS", false, "allow webhook URLs that resolve to loopback, private or link-local addresses (not cloud metadata ones)")
	f.allowMetadata = e.Bool("allow-metadata-addresses", "HERALD_ALLOW_METADATA_ADDRESSES", false, "with --allow-private-networks, also allow cloud metadata addresses such as 169.254.169.254, and names such as metadata.google.internal")
	f.operatorToken = e.String("operator-token", "HERALD_OPERATOR_TOKEN", "", "token authorising the operator calls (/v3/operator/: accounts and portal links) and nothing else; at least 32 characters (default: off, those calls answer 404)")
	e.Group("Delivery")
	f.concurrency = e.Int("concurrency", "HERALD_CONCURRENCY", 512, "delivery attempts in flight (or not yet recorded) in this process")
	f.perWebhook = e.Int("per-webhook-concurrency", "HERALD_PER_WEBHOOK_CONCURRENCY", 64, "of those, attempts to one webhook")
	f.lease = e.Duration("lease", "HERALD_LEASE", 0, "how long a claimed attempt is held before another claim may take it (default 2×attempt-timeout+10s)")
	e.Group("Storage")
	f.keep = e.String("retention", "HERALD_RETENTION", "30d", "remove completed event logs older than this, e.g. 30d or 12h (0: keep forever)")
	f.bodyLimit = e.String("response-body-limit", "HERALD_RESPONSE_BODY_LIMIT", "4KiB", "bytes of a receiver's answer kept with each attempt, e.g. 4KiB, 512 or 0 (none); at most 64KiB")
	e.Group("Logs and diagnostics")
	f.logLevel = e.String("log-level", "HERALD_LOG_LEVEL", "info", "debug, info, warn or error (debug adds each claim and attempt)")
	f.logFormat = e.String("log-format", "HERALD_LOG_FORMAT", "text", "text (key=value lines) or json (one object per line)")
	f.accessLog = e.Bool("access-log", "HERALD_ACCESS_LOG", true, "log each API and portal request at info: request id, route, status, size, duration")
	e.Group("Limits")
	f.rateLimit = e.Int("rate-limit", "HERALD_RATE_LIMIT", server.DefaultRateLimit, "API requests per second one API token (or portal session) may make, with bursts of twice as many; 0: no limit")
	f.rateAnon = e.Int("rate-limit-anonymous", "HERALD_RATE_LIMIT_ANONYMOUS", server.DefaultRateLimitAnonymous, "requests per second one client address may make without valid credentials, with bursts of twice as many; 0: no limit")
	f.bodies = e.String("max-request-bodies", "HERALD_MAX_REQUEST_BODIES", "16MiB", "bytes of request bodies in flight at once, all requests together; past it a request is answered 503 with Retry-After")
	f.maxConns = e.Int("max-connections", "HERALD_MAX_CONNECTIONS", 0, "inbound connections open at once; past it a new one is closed (default: half the descriptor limit)")
	f.maxConnsAddr = e.Int("max-connections-per-address", "HERALD_MAX_CONNECTIONS_PER_ADDRESS", 0, "of those, from one client address, trusted proxies exempt (default: a quarter of --max-connections)")
	f.memLimit = e.String("memory-limit", "HERALD_MEMORY_LIMIT", "512MiB", "soft memory limit of the Go runtime (its GOMEMLIMIT): past it the garbage collector works harder; 0 for none (default: 512MiB, or GOMEMLIMIT when that is set)")
	f.proxies = e.String("trusted-proxies", "HERALD_TRUSTED_PROXIES", "", "comma-separated addresses or CIDR prefixes of proxies whose X-Forwarded-For names the client (default: none; the connection's address is the client's)")
	e.Group("Logs and diagnostics")
	f.cpuProfile = e.String("cpu-profile", "HERALD_CPU_PROFILE", "", "write a CPU profile of the whole run to this `file` when herald stops, for go tool pprof (off by default)")
	if err := parse(e, args); err != nil {
		return nil, err
	}
	return f, nil
}

// config reads the flags into a server.Config: what only the command line
// knows (sizes, durations and lists in text; 0 meaning "off" for the rate
// limits) is read here, and the rest refused by Config.Validate, all of it
// in one message.
func (f *serveFlags) config() (server.Config, error) {
	var v []string
	if *f.rateLimit < 0 || *f.rateAnon < 0 {
		v = append(v, "--rate-limit and --rate-limit-anonymous must not be negative (0 turns a limit off)")
	}
	trusted, err := ratelimit.ParseProxies(*f.proxies)
	if err != nil {
		v = append(v, "--trusted-proxies: "+err.Error())
	}
	// In delivery.Config zero is the default; on the command line the
	// default is written out, so a zero is a mistake, passed on as -1 for
	// Validate to refuse in the flag's words.
	timeout := *f.timeout
	if timeout == 0 {
		timeout = -1
	}
	for _, n := range []*int{f.maxAttempts, f.suspendAfter, f.concurrency, f.perWebhook} {
		if *n == 0 {
			*n = -1
		}
	}
	retain, err := retention.ParseDuration(*f.keep)
	if err != nil {
		v = append(v, "--retention "+err.Error())
	}
	keepBody, err := parseSize(*f.bodyLimit, store.MaxResponseBody)
	if err != nil {
		v = append(v, "--response-body-limit: "+err.Error())
	} else if keepBody == 0 {
		keepBody = -1 // delivery.Config's "none"
	}
	bodyBytes, err := parseSize(*f.bodies, 1<<40)
	if err != nil {
		v = append(v, "--max-request-bodies: "+err.Error())
	}
	memBytes, err := parseSize(*f.memLimit, 1<<40)
	if err != nil {
		v = append(v, "--memory-limit: "+err.Error())
	}
	f.memoryBytes = int64(memBytes)
	cfg := server.Config{
		DatabaseURL: *f.store.database,
		Delivery: delivery.Config{AttemptTimeout: timeout, MaxAttempts: *f.maxAttempts, RetryInterval: *f.interval,
			SuspendAfter: *f.suspendAfter, Concurrency: *f.concurrency, PerWebhook: *f.perWebhook, Lease: *f.lease,
			ResponseBodyLimit: keepBody},
		OperatorToken: *f.operatorToken, PublicURL: strings.TrimRight(*f.publicURL, "/"), SuspendedReminder: *f.reminder,
		SMTPURL: *f.smtpURL, MailFrom: *f.mailFrom, AllowPrivate: *f.allowPrivate, AllowMetadata: *f.allowMetadata, EgressProxy: *f.egressProxy, SecureCookies: *f.secureCookies,
		Retention:   retention.Config{Keep: retain},
		NoAccessLog: !*f.accessLog,
		RateLimit:   offIfZero(*f.rateLimit), RateLimitAnonymous: offIfZero(*f.rateAnon), TrustedProxies: trusted,
		BodiesInFlight: int64(bodyBytes), Conns: admission.Conns{Total: *f.maxConns, PerAddress: *f.maxConnsAddr},
		BootstrapEmail: os.Getenv("HERALD_BOOTSTRAP_EMAIL"), BootstrapPassword: os.Getenv("HERALD_BOOTSTRAP_PASSWORD"),
		BootstrapToken: os.Getenv("HERALD_BOOTSTRAP_TOKEN"),
	}
	if err := cfg.Validate(); err != nil {
		v = append(v, err.Error())
	}
	if len(v) > 0 {
		return server.Config{}, errors.New(strings.Join(v, "; "))
	}
	return cfg, nil
}

// logger is the process's logger, as --log-level and --log-format say.
func (f *serveFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", *f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", *f.logFormat)
}

// setMemoryLimit sets the runtime's soft memory limit, unless GOMEMLIMIT
// is set and --memory-limit (or its variable) is not: then the runtime has
// read GOMEMLIMIT already, and it stands. 0 lifts the limit.
func setMemoryLimit(e *envFlags, n int64) {
	if os.Getenv("GOMEMLIMIT") != "" && !e.given("memory-limit", "HERALD_MEMORY_LIMIT") {
		return
	}
	if n == 0 {
		n = math.MaxInt64
	}
	debug.SetMemoryLimit(n)
}

// bindListeners listens on the API's address and, when one is given, the
// metrics address.
func bindListeners(addr, metricsAddr string) (api, metrics net.Listener, err error) {
	api, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--addr %s: cannot listen: %w; stop what uses it or choose another address", addr, listenCause(err))
	}
	if metricsAddr == "" {
		return api, nil, nil
	}
	metrics, err = net.Listen("tcp", metricsAddr)
	if err != nil {
		api.Close()
		return nil, nil, fmt.Errorf("--metrics-addr %s: cannot listen: %w; it must be free and differ from --addr", metricsAddr, listenCause(err))
	}
	return api, metrics, nil
}

// listenCause drops the "listen tcp ADDR:" a listen error starts with, which
// the flag's name and value replace.
func listenCause(err error) error {
	if op, ok := errors.AsType[*net.OpError](err); ok {
		return op.Err
	}
	return err
}

// startCPUProfile profiles the process into path until the returned stop;
// with no path (--cpu-profile unset) it profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// offIfZero maps a rate flag to server.Config's: the flag's 0 is no limit,
// the config's is the default.
func offIfZero(n int) float64 {
	if n == 0 {
		return -1
	}
	return float64(n)
}

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &envFlags{fs: flag.NewFlagSet("herald migrate", flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	sf := addStoreFlags(e)
	create := e.fs.Bool("create", false, "create the SQLite database (and its key file) when its file does not exist; without it a missing file is refused, as a mistyped path would start an empty database")
	if err := parse(e, args); err != nil {
		return err
	}
	// A URL herald cannot open, or (unless told to create it) a SQLite file
	// that is not there, is refused before a key file is created for it.
	if err := store.CheckURL(*sf.database); err != nil {
		return err
	}
	if !*create {
		if err := store.CheckExists(*sf.database); errors.Is(err, store.ErrNoDatabase) {
			return fmt.Errorf("--database %s: %w; check the path, or pass --create to make a new database", *sf.database, err)
		} else if err != nil {
			return fmt.Errorf("--database %s: %w", *sf.database, err)
		}
	}
	key, err := sf.key(stderr)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, *sf.database, store.Options{Key: key})
	if err != nil {
		return err
	}
	defer st.Close()
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "herald: %s schema at version %d\n", st.Engine(), v)
	return nil
}

func listenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &envFlags{fs: flag.NewFlagSet("herald listen", flag.ContinueOnError),
		summary: "A local receiver for building an integration: it verifies each delivery's signature, prints it,\nand answers 200 (401 when the signature does not verify), or passes it on to --forward.\nWith --pull WEBHOOK_ID it reads a pull webhook's events from herald instead, forwards each to --forward,\nand acknowledges it once the app answers 2xx."}
	e.fs.SetOutput(stderr)
	token := e.String("token", "HERALD_WEBHOOK_TOKEN", "", "the webhook's token, to verify signatures (required); for an ed25519 webhook, its public key (whpk_…)")
	next := e.String("next-token", "HERALD_WEBHOOK_NEXT_TOKEN", "", "during a token rotation, the next token (or next public key) as well: a delivery signed with either verifies (herald webhooks token ID prints both)")
	port := e.fs.Int("port", 9000, "port to listen on, on 127.0.0.1 (0 picks a free one)")
	forward := e.fs.String("forward", "", "URL of your app to pass verified deliveries on to, unchanged, such as http://localhost:3000/webhooks")
	e.Group("Reading a pull webhook")
	pull := e.fs.String("pull", "", "the id of a pull webhook to read events from, instead of listening (needs --forward)")
	server := e.String("server", "HERALD_SERVER", "http://127.0.0.1:8080", "with --pull, the herald to read from")
	pullToken := e.String("pull-token", "HERALD_PULL_TOKEN", "", "with --pull, the webhook's pull token (herald webhooks pull-token ID makes one); or --api-token")
	apiToken := e.String("api-token", "HERALD_API_TOKEN", "", "with --pull, an API token of the account instead of a pull token")
	if err := parse(e, args); err != nil {
		return err
	}
	const cmd = "herald listen"
	if *forward != "" {
		if u, err := url.Parse(*forward); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError{cmd, fmt.Errorf("--forward %q: want an absolute http or https URL, such as http://localhost:3000/webhooks", *forward)}
		}
	}
	if *pull != "" {
		return listenPull(ctx, cmd, *pull, *server, cmp.Or(*pullToken, *apiToken), *forward, stdout)
	}
	if *token == "" {
		return usageError{cmd, errors.New("--token or $HERALD_WEBHOOK_TOKEN is required: the webhook's token, to verify signatures")}
	}
	if *port < 0 || *port > 65535 {
		return usageError{cmd, fmt.Errorf("--port %d is not a port: want 1 to 65535, or 0 for a free one", *port)}
	}
	err := listen.Run(ctx, listen.Config{Token: *token, NextToken: *next, Addr: fmt.Sprintf("127.0.0.1:%d", *port), Forward: *forward, Out: stdout})
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("--port %d: 127.0.0.1:%d is in use; stop what uses it, or choose another port with --port (0 picks a free one)", *port, *port)
	}
	return err
}

// listenPull is herald listen --pull: a pull webhook's events read from
// herald at server and forwarded to forward.
func listenPull(ctx context.Context, cmd, webhookID, server, token, forward string, stdout io.Writer) error {
	if forward == "" {
		return usageError{cmd, errors.New("--pull needs --forward: the URL of your app to pass each event on to, such as http://localhost:3000/webhooks")}
	}
	if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{cmd, fmt.Errorf("--server %q: want a URL such as http://127.0.0.1:8080", server)}
	}
	if token == "" {
		return usageError{cmd, errors.New("--pull needs --pull-token ($HERALD_PULL_TOKEN) or --api-token ($HERALD_API_TOKEN): herald webhooks pull-token ID makes a pull token")}
	}
	// Each read waits up to 30 s for an event: the client allows longer.
	c := client.New(server, token, &http.Client{Timeout: 60 * time.Second})
	return listen.Pull(ctx, listen.PullConfig{Client: c, Webhook: webhookID, Forward: forward, Out: stdout})
}

// parseSize reads a byte count such as 4096, 4KiB or 64KiB, from 0 to max.
func parseSize(text string, max int) (int, error) {
	s, unit := strings.TrimSpace(text), 1
	for _, u := range []struct {
		suffix string
		n      int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} { // "B" last: it ends the others
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, unit = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > max/unit {
		return 0, fmt.Errorf("%q: want a size from 0 to %s, such as 4KiB, 16MiB or 4096 (bytes)", text, sizeText(max))
	}
	return n * unit, nil
}

// sizeText writes n bytes in the largest unit that divides it.
func sizeText(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
