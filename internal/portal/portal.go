// Package portal owns herald's admin portal: the pages where an account owner
// signs in, manages webhooks under Developer → Webhooks, reads and resends
// deliveries under Developer → Webhook Event Logs, sets the account's
// notification email, changes passwords and manages the account's people
// (invitations, roles), and takes single-use sign-in links (an operator's
// portal link, an invitation). herald serve mounts it at / beside the API.
//
// Pages are rendered on the server from embedded html/template files, parsed
// once at start; static files are embedded and served under checksummed URLs.
// A little JavaScript (static/app.js) makes some pages nicer, and none of them
// needs it. Every page and action behind sign-in reads and changes only the
// signed-in owner's account; every form carries a CSRF token and a one-time
// token (once.go), and every POST answers with a redirect whose page shows
// what it did once (flash.go).
package portal

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// Config holds what the portal needs.
type Config struct {
	Store *store.Store
	// Queue is the event pipeline of Store (queue.New), the one the
	// dispatcher is given.
	Queue *queue.Queue
	// Dispatcher makes Test sends and resends.
	Dispatcher *delivery.Dispatcher
	// Policy decides which webhook URLs may be saved, as in the API.
	Policy netguard.Policy
	Logger *slog.Logger
	// SecureCookies marks cookies Secure even when a request arrives over
	// plain HTTP, for herald behind a proxy that terminates TLS. Requests
	// that arrive over TLS always get Secure cookies.
	SecureCookies bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Limits limits request rates: per session, and per client address
	// for requests without one; zero limits nothing.
	Limits ratelimit.Limits
	// PublicURL is the portal's address for the links it shows (invitations);
	// "" uses the address each request came to.
	PublicURL string
	// DeviceKey signs the cookie that marks a browser as having signed in
	// as an email, which exempts it from that email's sign-in limit.
	DeviceKey []byte
	// EmailsKept says herald has no SMTP server: notification emails are
	// kept, not sent, and Settings says so beside them.
	EmailsKept bool
}

// deliverer is what the portal asks of the delivery package.
type deliverer interface {
	Test(ctx context.Context, accountID, webhookID string, kind event.Kind, opt delivery.TestOptions) (delivery.TestResult, error)
	Resend(ctx context.Context, accountID, logID string) error
}

// handler holds the portal's dependencies; each page and action is one of
// its methods, in a file of its own.
type handler struct {
	store    *store.Store
	queue    *queue.Queue
	delivery deliverer
	policy   netguard.Policy
	log      *slog.Logger
	pages    *pages
	static   *staticFiles
	secure   bool
	now      func() time.Time
	limiter  *limiter
	limits   ratelimit.Limits
	// publicURL is Config.PublicURL.
	publicURL string
	// hashing bounds concurrent password checks: each argon2id check takes
	// 64 MiB and a noticeable slice of a core.
	hashing chan struct{}
	// checking bounds concurrent signature checks: each hashes a body of up
	// to a few hundred KiB some hundred ways.
	checking chan struct{}
	// suspendAfter is how many failed events in a row suspend a webhook,
	// for the page that explains suspension.
	suspendAfter int
	// retry is the retry policy a webhook without its own follows.
	retry store.RetryPolicy
	// emailsKept is Config.EmailsKept.
	emailsKept bool
}

// New returns the portal's handler, to be mounted at /.
func New(c Config) http.Handler {
	static := mustLoadStatic()
	h := &handler{
		store: c.Store, queue: c.Queue, policy: c.Policy, log: c.Logger, secure: c.SecureCookies, now: c.Now, publicURL: c.PublicURL,
		emailsKept: c.EmailsKept,
		pages:      mustParsePages(static), static: static,
		hashing:  make(chan struct{}, max(2, runtime.NumCPU())),
		checking: make(chan struct{}, max(2, runtime.NumCPU())),
		retry:    validator.DefaultRetryPolicy,
	}
	if c.Dispatcher != nil {
		h.delivery = c.Dispatcher
		h.suspendAfter = c.Dispatcher.Config().SuspendAfter
		h.retry = c.Dispatcher.DefaultRetryPolicy()
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.limiter = &limiter{store: c.Store, key: c.DeviceKey}
	h.limits = c.Limits
	return h.routes()
}
