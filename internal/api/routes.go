// Package api owns herald's REST API under /v3: bearer-token auth scoped to
// one account, JSON in and out, RFC 9457 problem details for every error. Its
// handlers validate input and call the store, licensing and delivery
// packages; they hold no SQL and no delivery logic.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/accesslog"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/openapi"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// deliverer is what the API asks of the delivery package: the Test action
// and resends.
type deliverer interface {
	Test(ctx context.Context, accountID, webhookID string, kind event.Kind, opt delivery.TestOptions) (delivery.TestResult, error)
	Resend(ctx context.Context, accountID, logID string) error
}

// API serves /v3.
type API struct {
	store     *store.Store
	queue     *queue.Queue
	delivery  deliverer
	licensing *licensing.Service
	policy    netguard.Policy
	log       *slog.Logger
	limits    ratelimit.Limits
	// retry is the retry policy a webhook without its own follows.
	retry store.RetryPolicy

	operatorHash string // SHA-256 of the operator token; "" when off
	publicURL    string
	mux          *http.ServeMux // the account's calls
	operatorMux  *http.ServeMux
}

// statementChecked are the routes whose work is one statement that checks
// a kept API token itself (auth.go, checkedInStatement), so that their
// token is not read first: creating a license, herald's busiest call.
var statementChecked = map[string]bool{
	"POST /v3/licenses": true,
}

// Config holds what the API needs.
type Config struct {
	Store *store.Store
	// Queue is the event pipeline of Store (queue.New), the one the
	// dispatcher is given.
	Queue      *queue.Queue
	Dispatcher *delivery.Dispatcher
	Policy     netguard.Policy
	Logger     *slog.Logger
	// Limits limits request rates per token, and per client address for
	// requests without a valid token; zero limits nothing.
	Limits ratelimit.Limits
	// OperatorToken authorises /v3/operator/ and nothing else; "" turns
	// those calls off (404).
	OperatorToken string
	// PublicURL is the portal's address for the links the API makes
	// ("": the address a request came to).
	PublicURL string
}

// New returns the API's handler, to be mounted at /.
func New(c Config) http.Handler {
	a := &API{store: c.Store, queue: c.Queue, licensing: licensing.New(c.Store), policy: c.Policy, log: c.Logger, limits: c.Limits,
		retry: validator.DefaultRetryPolicy}
	if c.Dispatcher != nil {
		a.delivery = c.Dispatcher
		a.retry = c.Dispatcher.DefaultRetryPolicy()
		// A client's changes wait while what they fired falls behind
		// (decision 0115).
		a.licensing = a.licensing.PacedBy(c.Dispatcher)
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if c.OperatorToken != "" {
		a.operatorHash = auth.HashToken(c.OperatorToken)
	}
	a.publicURL = strings.TrimRight(c.PublicURL, "/")
	mux := http.NewServeMux()
	a.mux = mux
	a.operatorMux = http.NewServeMux()
	h := func(pattern string, fn handler) {
		mux := mux
		if strings.HasPrefix(pattern, "/v3/operator/") || strings.Contains(pattern, " /v3/operator/") {
			mux = a.operatorMux
		}
		// Every POST honours Idempotency-Key (idempotency.go) but the one
		// that creates an API token: its answer holds the token's secret,
		// which herald keeps only hashed, and a replay would have to store
		// it. Creating a token fires nothing; a retry makes a second one,
		// which the owner can revoke.
		// Nor do the operator's calls: their answers hold secrets too, and
		// keys are kept per account.
		// A pull token is a secret in its answer too (decision 0140).
		if strings.HasPrefix(pattern, http.MethodPost+" ") && pattern != "POST /v3/api-tokens" && pattern != "POST /v3/webhooks/{id}/pull-tokens" &&
			!strings.Contains(pattern, " /v3/operator/") {
			fn = a.idempotent(fn)
		}
		mux.Handle(pattern, a.serve(fn))
	}

	h("GET /v3/account", a.getAccount)
	h("PATCH /v3/account", a.updateAccount)

	h("GET /v3/api-tokens", a.listAPITokens)
	h("POST /v3/api-tokens", a.createAPIToken)
	h("DELETE /v3/api-tokens/{id}", a.deleteAPIToken)

	h("GET /v3/emails", a.listEmails)

	h("POST /v3/webhooks", a.createWebhook)
	h("GET /v3/webhooks", a.listWebhooks)
	h("GET /v3/webhooks/{id}", a.getWebhook)
	h("PATCH /v3/webhooks/{id}", a.updateWebhook)
	h("DELETE /v3/webhooks/{id}", a.deleteWebhook)
	h("GET /v3/webhooks/{id}/token", a.getWebhookToken)
	h("POST /v3/webhooks/filter-test", a.testFilter)
	h("POST /v3/webhooks/{id}/test", a.testWebhook)
	h("POST /v3/webhooks/{id}/recover", a.recoverWebhook)
	h("GET /v3/webhooks/{id}/recoveries", a.listRecoveries)
	h("GET /v3/webhooks/{id}/recoveries/{rid}", a.getRecovery)
	h("DELETE /v3/webhooks/{id}/recoveries/{rid}", a.cancelRecovery)
	h("POST /v3/webhooks/{id}/token/rotate", a.rotateWebhookToken)
	h("POST /v3/webhooks/{id}/token/rotate/finish", a.finishWebhookTokenRotation)
	h("POST /v3/webhooks/{id}/pull-tokens", a.createPullToken)
	h("GET /v3/webhooks/{id}/events", a.readEvents)
	h("POST /v3/webhooks/{id}/events/ack", a.ackEvents)

	h("GET /v3/webhook-event-logs", a.listLogs)
	h("GET /v3/webhook-event-logs/{id}", a.getLog)
	h("POST /v3/webhook-event-logs/{id}/resend", a.resendLog)
	h("POST /v3/webhook-event-logs/{id}/skip", a.skipLog)

	a.licensingRoutes(h)

	a.operatorRoutes(h)
	h("/v3/operator/", func(w http.ResponseWriter, r *http.Request) error {
		if allow := allowed(a.operatorMux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return problem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
				r.Method+" is not an API call at "+r.URL.Path+"; allowed: "+strings.Join(allow, ", "))
		}
		return problem(http.StatusNotFound, "not-found", "Not found", "no API call at "+r.Method+" "+r.URL.Path)
	})

	h("/v3/", func(w http.ResponseWriter, r *http.Request) error {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return problem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
				r.Method+" is not an API call at "+r.URL.Path+"; allowed: "+strings.Join(allow, ", "))
		}
		return problem(http.StatusNotFound, "not-found", "Not found", "no API call at "+r.Method+" "+r.URL.Path)
	})

	// The API reference, each event kind's payload schema from it, and the
	// accounts' public signing keys need no token; everything else does.
	root := http.NewServeMux()
	root.HandleFunc("GET /v3/openapi.json", a.serve(func(w http.ResponseWriter, r *http.Request) error { serveOpenAPI(w, r); return nil }))
	root.HandleFunc("GET /v3/event-types", a.serve(a.listEventTypes))
	root.HandleFunc("GET /v3/event-types/{kind}/schema", a.serve(a.getEventTypeSchema))
	root.HandleFunc("GET /v3/signing-keys", a.serve(a.listSigningKeys))
	root.Handle("/v3/operator/", a.operator())
	root.Handle("/", a.authenticate(mux))
	return withRequestID(root)
}

// RequestIDHeader carries the id of each API request in its answer, and the
// server log names the same id beside any failure and in the access log,
// so a client reporting a 500 can point an operator to its cause without
// the answer revealing it.
const RequestIDHeader = accesslog.RequestIDHeader

// withRequestID gives a request an id unless the access log, in front of
// every surface, already has.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if w.Header().Get(RequestIDHeader) == "" {
			w.Header().Set(RequestIDHeader, store.NewID())
		}
		next.ServeHTTP(w, r)
	})
}

// serve serves fn as every handler is served: the route named for the
// access log, a malformed URL refused, errors answered as problems.
func (a *API) serve(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		accesslog.SetRoute(r)
		err := checkURL(r)
		if err == nil {
			err = checkQuery(r)
		}
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			a.writeError(w, r, err)
		}
	}
}

// serveOpenAPI answers the API reference as JSON.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(openapi.JSON())
}

// allowed lists the methods the API answers at r's path. The catch-all
// pattern answers for every method, so ServeMux's own 405 never happens;
// this restores it.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/v3/" && pattern != "/v3/operator/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}
