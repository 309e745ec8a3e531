package delivery

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/heraldhq/herald/internal/attempt"
)

// Reaches is what the Sender reads of how a webhook's receiver is reached
// (its body's form, client certificate, OAuth2 client), part of every
// Store: a dispatcher that could not read it would send a webhook's
// requests without its client certificate or token, and they would fail.
type Reaches interface {
	WebhookReach(ctx context.Context, webhookID string) (attempt.Reach, error)
	// ReachGeneration moves when this process changes a webhook's reach.
	ReachGeneration() uint64
}

// ReachFresh is how long a webhook's reach is kept before it is read
// again: a change made by another process reaches this one's requests
// within it (this process's own changes at once, through
// ReachGeneration). One read by primary key per webhook per second.
const ReachFresh = time.Second

// route is how one webhook's requests go out: its client (its own, with
// its client certificate, or the Sender's) and its token, if any.
type route struct {
	thin   bool
	client *http.Client // nil: the Sender's
	tokens *tokens      // nil: no Authorization header
	fail   string       // why no request can be made (a certificate that does not load)
}

// routes keeps each webhook's route, read through Reaches.
type routes struct {
	reaches Reaches
	base    *http.Transport // the Sender's, cloned for a client certificate
	now     func() time.Time

	mu   sync.Mutex
	byID map[string]*routeEntry
}

type routeEntry struct {
	readAt time.Time
	gen    uint64
	tlsFP  [32]byte // what the route's client and tokens were made of
	authFP [32]byte
	route  *route
}

// maxRoutes bounds the webhooks whose routes are kept; past it all are
// forgotten (their clients' idle connections closed) and read again.
const maxRoutes = 4096

// get returns webhookID's route, read again when older than ReachFresh or
// changed here since.
func (r *routes) get(ctx context.Context, webhookID string) (*route, error) {
	if r == nil || r.reaches == nil || webhookID == "" {
		return &route{}, nil
	}
	gen, now := r.reaches.ReachGeneration(), r.now()
	r.mu.Lock()
	e := r.byID[webhookID]
	if e != nil && e.gen == gen && now.Sub(e.readAt) < ReachFresh && !now.Before(e.readAt) {
		r.mu.Unlock()
		return e.route, nil
	}
	r.mu.Unlock()
	reach, err := r.reaches.WebhookReach(ctx, webhookID)
	if err != nil {
		return nil, fmt.Errorf("read webhook %s reach: %w", webhookID, err)
	}
	tlsFP, authFP := fingerprint(reach.TLS), fingerprint(reach.OAuth2)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil || len(r.byID) >= maxRoutes {
		for _, old := range r.byID {
			old.route.close()
		}
		r.byID = map[string]*routeEntry{}
	}
	old := r.byID[webhookID]
	next := &route{thin: reach.Thin}
	switch {
	case reach.TLS == nil:
	case old != nil && old.tlsFP == tlsFP:
		next.client, next.fail = old.route.client, old.route.fail
	default:
		next.client, next.fail = r.clientFor(reach.TLS)
	}
	switch {
	case reach.OAuth2 == nil:
	case old != nil && old.authFP == authFP && old.tlsFP == tlsFP && old.route.tokens != nil:
		next.tokens = old.route.tokens
	default:
		next.tokens = newTokens(*reach.OAuth2, r.base, r.now)
	}
	if old != nil && old.route.client != nil && old.route.client != next.client {
		old.route.close()
	}
	r.byID[webhookID] = &routeEntry{readAt: now, gen: gen, tlsFP: tlsFP, authFP: authFP, route: next}
	return next, nil
}

// fingerprint tells one configuration from another without keeping it.
func fingerprint(v any) [32]byte {
	b, _ := json.Marshal(v) // plain strings
	return sha256.Sum256(b)
}

func (rt *route) close() {
	if rt.client != nil {
		rt.client.CloseIdleConnections()
	}
}

// clientFor makes a client of its own for a webhook's client certificate,
// on a clone of the Sender's transport: the same guarded dial (and egress
// proxy), time-outs and bounds.
func (r *routes) clientFor(t *attempt.TLS) (*http.Client, string) {
	cert, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey))
	if err != nil {
		return nil, "the webhook's client certificate does not load: " + err.Error()
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.CACertificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(t.CACertificate)) {
			return nil, "the webhook's CA certificate does not load"
		}
		cfg.RootCAs = pool
	}
	tr := r.base.Clone()
	tr.TLSClientConfig = cfg
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: tr, CheckRedirect: noRedirects}, ""
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// tokenEarly is how long before its expiry a token is fetched again, so
// that none expires on its way to the receiver; a quarter of its lifetime
// for a token that lives less than four times as long.
const tokenEarly = time.Minute

// tokens is one webhook's OAuth2 token, fetched with the client
// credentials grant and shared by its attempts in this process: one fetch
// at a time, the others waiting for it.
type tokens struct {
	cfg  clientcredentials.Config
	base *http.Transport
	now  func() time.Time

	mu    sync.Mutex // held across a fetch: attempts at once share it
	tok   *oauth2.Token
	early time.Duration // how long before tok's expiry to fetch again
}

func newTokens(o attempt.OAuth2, base *http.Transport, now func() time.Time) *tokens {
	return &tokens{cfg: clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL, Scopes: o.Scopes},
		base: base, now: now}
}

// token returns the kept token, or fetches one when none is kept or it
// expires within tokenEarly.
func (t *tokens) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != nil && (t.tok.Expiry.IsZero() || t.now().Add(t.early).Before(t.tok.Expiry)) {
		return t.tok.AccessToken, nil
	}
	return t.fetch(ctx)
}

// refetch replaces the token a receiver refused (401), unless another
// attempt has replaced it already, and returns the new one.
func (t *tokens) refetch(ctx context.Context, refused string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != nil && t.tok.AccessToken != refused {
		return t.tok.AccessToken, nil
	}
	return t.fetch(ctx)
}

// fetch asks the token endpoint, through the Sender's transport (the
// guarded dial, the egress proxy), for a new token. t.mu is held.
func (t *tokens) fetch(ctx context.Context) (string, error) {
	t.tok = nil
	hc := &http.Client{Transport: t.base, CheckRedirect: noRedirects}
	tok, err := t.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		return "", tokenError(err)
	}
	if tok.AccessToken == "" {
		return "", errors.New("the token endpoint answered no access_token")
	}
	// Expiry is read from expires_in against the wall clock; kept as the
	// dispatcher's clock sees it.
	if !tok.Expiry.IsZero() {
		life := time.Until(tok.Expiry)
		tok.Expiry, t.early = t.now().Add(life), min(tokenEarly, life/4)
	}
	t.tok = tok
	return tok.AccessToken, nil
}

// tokenError says why a fetch failed, in the words of the endpoint's
// answer when it gave one; never with the client's secret, which no
// answer or error of the oauth2 package carries.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("the token endpoint answered %d", re.Response.StatusCode)
		if re.ErrorCode != "" {
			msg += " " + re.ErrorCode
			if re.ErrorDescription != "" {
				msg += ": " + re.ErrorDescription
			}
		}
		return errors.New(msg)
	}
	return err
}
