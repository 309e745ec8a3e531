// Package heraldtest starts real herald servers and real receivers for tests:
// a herald on a loopback port over a real database (a fresh SQLite file, or a
// fresh PostgreSQL schema), and HTTP receivers that record every request's
// raw bytes. Everything it starts is stopped with t.Cleanup.
package heraldtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/server"
	"github.com/heraldhq/herald/internal/store"
)

// Options configure Start. Zero fields take test-friendly defaults: attempt
// time-out 10s (a receiver on a busy machine still answers within it, so no
// 2xx is taken for a failure and retried), retry interval 50ms, 5 attempts,
// suspend after 50.
type Options struct {
	DatabaseURL string // default: a new SQLite file in t.TempDir()
	Key         []byte // default: random
	Delivery    delivery.Config
	Retention   retention.Config // Keep 0: keep logs forever
	SMTPURL     string
	Email       string                                    // bootstrap owner email, default owner@example.com
	Password    string                                    // default "correct horse battery staple"
	Token       string                                    // default: a new API token
	Transport   func(http.RoundTripper) http.RoundTripper // wraps the client's transport, e.g. to validate against OpenAPI
	// DenyPrivate keeps herald's default outbound policy: no deliveries to
	// loopback or private addresses (so none to test receivers).
	DenyPrivate bool
	// RateLimit and RateLimitAnonymous are server.Config's: 0 keeps the
	// production defaults, a negative value turns the limit off.
	RateLimit, RateLimitAnonymous float64
	TrustedProxies                ratelimit.Proxies
	// ReadTimeout bounds reading each request (server.Config.ReadTimeout).
	ReadTimeout time.Duration
	// OperatorToken turns on the operator calls (server.Config.OperatorToken).
	OperatorToken string
	// EgressProxy sends every delivery through this proxy
	// (server.Config.EgressProxy).
	EgressProxy string
	// PublicURL, SuspendedReminder, ReminderCheck, EmailCheck and
	// ExpiryCheck are server.Config's.
	PublicURL                                                 string
	SuspendedReminder, ReminderCheck, EmailCheck, ExpiryCheck time.Duration
	// Now is herald's clock (server.Config.Now): time.Now when nil, or a
	// Clock's Now for a test that moves time forward rather than wait.
	Now func() time.Time

	// Logs, when set, also gets herald's log lines at info and above, as
	// text, for a test that reads what herald logged (the test's own log
	// gets warnings and errors either way).
	Logs io.Writer

	// Setup runs on the opened server before it starts serving, to mount more
	// handlers (e.g. the portal) or adjust it.
	Setup func(*server.Server)
}

// Herald is a running herald.
type Herald struct {
	URL      string
	Token    string
	Email    string
	Password string
	Server   *server.Server
	Client   *http.Client
	// API calls this herald's API with its token through package client
	// (and Client's transport, so Options.Transport sees its calls too).
	API     *client.Client
	Options Options
	t       testing.TB
	stop    func()
}

// Start opens and runs a herald; it stops at the end of the test.
func Start(t testing.TB, o Options) *Herald {
	t.Helper()
	if o.DatabaseURL == "" {
		o.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "herald.db")
	}
	if o.Key == nil {
		o.Key = make([]byte, 32)
		rand.Read(o.Key)
	}
	if o.Delivery.AttemptTimeout == 0 {
		o.Delivery.AttemptTimeout = 10 * time.Second
	}
	if o.Delivery.RetryInterval == 0 {
		o.Delivery.RetryInterval = 50 * time.Millisecond
	}
	if o.Email == "" {
		o.Email = "owner@example.com"
	}
	if o.Password == "" {
		o.Password = defaultPassword
	}
	if o.Token == "" {
		o.Token = auth.NewAPIToken()
	}
	h := &Herald{Token: o.Token, Email: o.Email, Password: o.Password, Options: o, t: t}
	h.run()
	t.Cleanup(h.Stop)
	return h
}

// defaultPasswordHash is Options' default password hashed, once per test
// binary rather than once per herald: argon2id costs about a fifth of a
// CPU-second by design, and a package's tests start hundreds of heralds.
var defaultPasswordHash = sync.OnceValues(func() (string, error) { return auth.HashPassword(defaultPassword) })

const defaultPassword = "correct horse battery staple"

func (h *Herald) run() {
	t, o := h.t, h.Options
	t.Helper()
	var hash string
	if o.Password == defaultPassword {
		var err error
		if hash, err = defaultPasswordHash(); err != nil {
			t.Fatalf("hash the default password: %v", err)
		}
	}
	var handler slog.Handler = slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})
	if o.Logs != nil {
		handler = slog.NewMultiHandler(handler, slog.NewTextHandler(o.Logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	logger := slog.New(handler)
	if err := seedSQLite(o.DatabaseURL); err != nil {
		t.Fatalf("start herald: %v", err)
	}
	srv, err := server.Open(context.Background(), server.Config{
		DatabaseURL: o.DatabaseURL, SecretKey: o.Key, Delivery: o.Delivery, Retention: o.Retention, SMTPURL: o.SMTPURL,
		AllowPrivate: !o.DenyPrivate, BootstrapEmail: o.Email, BootstrapPassword: o.Password, BootstrapPasswordHash: hash, BootstrapToken: o.Token,
		Logger: logger, Out: io.Discard, ReadTimeout: o.ReadTimeout,
		RateLimit: o.RateLimit, RateLimitAnonymous: o.RateLimitAnonymous, TrustedProxies: o.TrustedProxies,
		OperatorToken: o.OperatorToken, EgressProxy: o.EgressProxy, PublicURL: o.PublicURL, SuspendedReminder: o.SuspendedReminder, ReminderCheck: o.ReminderCheck, EmailCheck: o.EmailCheck, ExpiryCheck: o.ExpiryCheck, Now: o.Now,
	})
	if err != nil {
		t.Fatalf("start herald: %v", err)
	}
	if o.Setup != nil {
		o.Setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if h.URL == "" {
		h.URL = "http://" + ln.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Run(ctx, ln); err != nil {
			t.Errorf("herald run: %v", err)
		}
	}()
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if o.Transport != nil {
		rt = o.Transport(rt)
	}
	h.Server, h.Client = srv, &http.Client{Transport: rt, Timeout: 30 * time.Second}
	h.API = client.New(h.URL, h.Token, h.Client)
	h.stop = func() { cancel(); <-done }
}

// Stop shuts the herald down gracefully; Stop twice is fine.
func (h *Herald) Stop() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// Do calls the API with the account's token and decodes a JSON answer into
// out (when out is not nil). body may be nil, a []byte/string sent as is, or
// a value encoded as JSON.
func (h *Herald) Do(method, path string, body, out any) int {
	h.t.Helper()
	return h.DoAs(h.Token, method, path, body, out)
}

// DoAs is Do with another token.
func (h *Herald) DoAs(token, method, path string, body, out any) int {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.URL+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

// Must is Do that fails the test unless the status is want.
func (h *Herald) Must(want int, method, path string, body, out any) {
	h.t.Helper()
	var raw json.RawMessage
	got := h.Do(method, path, body, &raw)
	if got != want {
		h.t.Fatalf("%s %s: status %d; want %d; body %s", method, path, got, want, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

// Webhook, Log and Attempt are the API's shapes as the client reads them:
// the client's types, which a test of the client holds to the reference.
type (
	Webhook = client.Webhook
	Log     = client.EventLog
	Attempt = client.Attempt
)

// CreateWebhook creates a webhook subscribed to events at url.
func (h *Herald) CreateWebhook(name, url string, events ...string) Webhook {
	h.t.Helper()
	w, err := h.API.CreateWebhook(context.Background(), client.WebhookCreate{Name: name, URL: url, Events: events})
	if err != nil {
		h.t.Fatalf("create webhook: %v", err)
	}
	return w
}

// Webhook reads a webhook.
func (h *Herald) Webhook(id string) Webhook {
	h.t.Helper()
	w, err := h.API.Webhook(context.Background(), id)
	if err != nil {
		h.t.Fatalf("read webhook %s: %v", id, err)
	}
	return w
}

// Logs lists event logs with a raw query string such as "webhookId=…".
func (h *Herald) Logs(query string) []Log {
	h.t.Helper()
	var out struct{ Data []Log }
	h.Must(200, "GET", "/v3/webhook-event-logs?limit=500&"+query, nil, &out)
	return out.Data
}

// Log reads one log with its attempts.
func (h *Herald) Log(id string) Log {
	h.t.Helper()
	var l Log
	h.Must(200, "GET", "/v3/webhook-event-logs/"+id, nil, &l)
	return l
}

// Settled waits until nothing of h's database is in flight: no log pending
// (claimed, its outcome not yet recorded) and no email waiting in the
// outbox. A test calls it before moving a Clock forward, which ends the
// leases it passes: work still in flight would be taken over and done
// twice.
func (h *Herald) Settled() {
	h.t.Helper()
	Eventually(h.t, 30*time.Second, "nothing in flight (no log pending, no email unsent)", func() bool {
		var n int
		err := h.Server.Store.QueryRow(context.Background(), `SELECT
 (SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL) +
 (SELECT COUNT(*) FROM emails WHERE sent_at IS NULL)`).Scan(&n)
		if err != nil {
			h.t.Fatalf("settled: %v", err)
		}
		return n == 0
	})
}

// CreateLicense creates a product and a license whose metadata holds data
// (none when nil), firing license.created, and returns the license id.
func (h *Herald) CreateLicense(metadata map[string]any) string {
	h.t.Helper()
	p, err := h.API.CreateProduct(context.Background(), "Product "+fmt.Sprint(time.Now().UnixNano()), nil)
	if err != nil {
		h.t.Fatalf("create product: %v", err)
	}
	l, err := h.API.CreateLicense(context.Background(), client.LicenseCreate{ProductID: p.ID, Metadata: metadata})
	if err != nil {
		h.t.Fatalf("create license: %v", err)
	}
	return l.ID
}

// Env is os.Getenv; here so tests read configuration in one place.
func Env(name string) string { return os.Getenv(name) }

// NewAccount creates another account in h's database, with an owner and an
// API token of its own, and returns h as that account sees it: its API
// calls carry the new account's token.
func (h *Herald) NewAccount(name, email string) *Herald {
	h.t.Helper()
	token := auth.NewAPIToken()
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{
		AccountName: name, OwnerEmail: email, PasswordHash: "x", TokenHash: auth.HashToken(token)}); err != nil {
		h.t.Fatalf("create account %s: %v", name, err)
	}
	other := &Herald{URL: h.URL, Token: token, Email: email, Server: h.Server, Client: h.Client,
		API: client.New(h.URL, token, h.Client), Options: h.Options, t: h.t}
	return other
}
