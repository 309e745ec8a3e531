package bench

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// A peer is a second sender the same scenarios are driven against, so that
// herald and another scheme are measured by one driver, one receiver and
// one ceiling. The bench does not run a peer: it is given its API's URL
// and key, fires through that API, and receives and verifies the peer's
// deliveries at its own loopback receiver (so the peer must reach
// 127.0.0.1). When the peer's process ids are given, the bench reads their
// CPU time from /proc as it reads herald's.
//
// A kind of peer is a peerAPI and a scheme: how to create a destination at
// a URL and learn its signing secret, fire one event carrying the bench's
// sequence number to every destination of the scenario, and remove them
// afterwards; and how the receiver verifies a delivery's signature and
// reads the sequence number back. The kinds are "herald" (another herald,
// driven through the same /v3 calls as the child), "outpost" (Hookdeck
// Outpost) and "convoy" (Convoy).

// Peer names the second sender.
type Peer struct {
	Kind string // one of PeerKinds
	// URL is its API's base: herald's root, Outpost's /api/v1, or Convoy's
	// /api/v1/projects/{projectID} (a Convoy key is a project's).
	URL  string
	Key  string // its API key (herald: an API token of write scope)
	PIDs []int  // its processes, whose CPU the bench reads; none: not read
}

// PeerKinds are the kinds of peer the bench drives.
var PeerKinds = []string{"herald", "outpost", "convoy"}

// peerScenarios are the scenarios a peer runs: those that need nothing of
// the sender beyond its API (e's and g's settings are herald's own).
var peerScenarios = map[string]bool{"a": true, "b": true, "c": true, "d": true, "f": true}

// peerEvent is the event type (Outpost's topic) a peer fires: the one the
// child fires, so that a peer's subscriptions read as herald's.
const peerEvent = "license.created"

// peerAPI is what the driver needs of a peer's API for one scenario.
type peerAPI interface {
	// open makes what the scenario's destinations share, so that one
	// fire reaches all of them (a product, a tenant, an owner).
	open(ctx context.Context) error
	// add creates a destination at url for peerEvent and returns its id
	// and the secret its deliveries are signed with.
	add(ctx context.Context, n int, url string) (id, secret string, err error)
	// fire fires one event carrying seq to every destination added.
	fire(ctx context.Context, seq int64) error
	// remove removes what open and add made: the peer keeps its state, and
	// the next scenario's events must not reach this one's destinations.
	remove(ctx context.Context)
}

// scheme is how the receiver reads a sender's deliveries.
type scheme interface {
	// verify checks a delivery's signature under its destination's secret.
	verify(secret string, h http.Header, body []byte, now time.Time) error
	// read returns the delivery's event id (its duplicates share it) and
	// the bench's sequence number it carries (0 when none).
	read(h http.Header, body []byte) (id string, seq int64)
}

// newPeerAPI returns the API of p's kind and the scheme its deliveries are
// read by (nil: herald's own).
func newPeerAPI(p *Peer) (peerAPI, scheme, error) {
	api := &peerClient{url: p.URL, key: p.Key, client: newClient()}
	switch p.Kind {
	case "herald":
		return &heraldPeer{c: &child{url: p.URL, token: p.Key, client: api.client}}, nil, nil
	case "outpost":
		return &outpostPeer{peerClient: api}, outpostScheme{}, nil
	case "convoy":
		return &convoyPeer{peerClient: api}, convoyScheme{}, nil
	}
	return nil, nil, fmt.Errorf("no peer kind %q (there are %s)", p.Kind, strings.Join(PeerKinds, ", "))
}

// measurePeer runs one fire-and-deliver scenario on the peer.
func measurePeer(ctx context.Context, o Options, rcv *receiver, su setup, f firing, name, title string) (Result, error) {
	if su.hold || len(su.env) > 0 {
		return Result{}, errors.New("the scenario needs settings of the sender's own")
	}
	api, sch, err := newPeerAPI(o.Peer)
	if err != nil {
		return Result{}, err
	}
	rcv.useScheme(sch)
	s := &session{peer: api, peerPIDs: o.Peer.PIDs, rcv: rcv, hooks: su.webhooks, dead: su.dead}
	defer func() {
		rcv.release()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		api.remove(ctx)
	}()
	if err := addPeerHooks(ctx, s, api, su); err != nil {
		return Result{}, fmt.Errorf("peer %s: %w", o.Peer.Kind, err)
	}
	fmt.Fprintf(o.Log, "bench: %s: %s, on the peer (%s at %s)\n", name, title, o.Peer.Kind, o.Peer.URL)
	s.cpu0, _ = s.usage()
	s.machine0 = readCPUTimes()
	fired := s.fire(ctx, f, o.Clients)
	s.drain(ctx, 15*time.Second, 5*time.Minute)
	r := s.result(name, title, fired, s.fireStart, 0)
	r.Sender = "peer"
	r.PeakRSSMB = 0 // a peer's peak is of its whole life, not of the scenario
	if len(o.Peer.PIDs) == 0 {
		r.CPUPer1000 = 0 // not the bench's to read
	}
	return r, nil
}

// addPeerHooks creates the scenario's destinations on the peer, each at its
// own path of the receiver.
func addPeerHooks(ctx context.Context, s *session, api peerAPI, su setup) error {
	if err := api.open(ctx); err != nil {
		return err
	}
	for i := range su.webhooks {
		// The path is registered before the secret is known: a delivery
		// cannot come before the destination exists.
		url := s.rcv.add(i, "", su.hold || i >= su.webhooks-su.dead)
		_, secret, err := api.add(ctx, i, url)
		if err != nil {
			return err
		}
		if secret == "" {
			return fmt.Errorf("destination %d: the peer told no signing secret", i)
		}
		s.rcv.setToken(i, secret)
	}
	return nil
}

// peerUsage is the CPU seconds of the peer's processes; a process that is
// gone counts nothing.
func peerUsage(pids []int) float64 {
	var cpu float64
	for _, pid := range pids {
		if c, ok := procCPU(pid, true); ok {
			cpu += c
		}
	}
	return cpu
}

// CheckPIDs reports the first of pids that names no live process: a peer's
// CPU read from a wrong pid would be silently zero.
func CheckPIDs(pids []int) error {
	for _, pid := range pids {
		if _, ok := procCPU(pid, false); !ok {
			return fmt.Errorf("no process %d", pid)
		}
	}
	return nil
}

// heraldPeer is another herald: a product, a webhook per destination, a
// license per event.
type heraldPeer struct {
	c       *child
	product string
	hooks   []string
}

func (h *heraldPeer) open(ctx context.Context) error {
	var p struct {
		ID string `json:"id"`
	}
	if _, err := h.c.call(ctx, "POST", "/v3/products", map[string]any{"name": "bench"}, &p); err != nil {
		return err
	}
	h.product = p.ID
	return nil
}

func (h *heraldPeer) add(ctx context.Context, n int, url string) (string, string, error) {
	var w struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if _, err := h.c.call(ctx, "POST", "/v3/webhooks", map[string]any{"name": fmt.Sprint("bench ", n), "url": url,
		"events": []string{peerEvent}}, &w); err != nil {
		return "", "", err
	}
	h.hooks = append(h.hooks, w.ID)
	return w.ID, w.Token, nil
}

func (h *heraldPeer) fire(ctx context.Context, seq int64) error {
	_, err := h.c.call(ctx, "POST", "/v3/licenses", map[string]any{"productId": h.product, "metadata": map[string]any{"bench": seq}}, nil)
	return err
}

func (h *heraldPeer) remove(ctx context.Context) {
	for _, id := range h.hooks {
		h.c.call(ctx, "DELETE", "/v3/webhooks/"+id, nil, nil)
	}
}

// peerClient makes a peer's API calls: a bearer key, JSON both ways.
type peerClient struct {
	url, key string
	client   *http.Client
}

func (p *peerClient) call(ctx context.Context, method, path string, in, out any) error {
	c := child{url: p.url, token: p.key, client: p.client}
	_, err := c.call(ctx, method, path, in, out)
	return err
}

// outpostPeer is Hookdeck Outpost (API /api/v1, its admin API key): a
// tenant per scenario, a webhook destination of the tenant's per
// destination, an event published to the tenant per event, whose data is
// {"bench": seq}. Removing the tenant removes its destinations.
type outpostPeer struct {
	*peerClient
	tenantID string
}

// tenant is the scenario's tenant: one of its own, so that its events
// reach only its destinations.
func (o *outpostPeer) tenant() string { return "herald-bench-" + o.tenantID }

func (o *outpostPeer) open(ctx context.Context) error {
	o.tenantID = randomHex(8)
	return o.call(ctx, "PUT", "/tenants/"+o.tenant(), nil, nil)
}

func (o *outpostPeer) add(ctx context.Context, n int, url string) (string, string, error) {
	var d outpostDestination
	if err := o.call(ctx, "POST", "/tenants/"+o.tenant()+"/destinations", map[string]any{
		"type": "webhook", "topics": []string{peerEvent}, "config": map[string]any{"url": url}}, &d); err != nil {
		return "", "", err
	}
	if d.Credentials.Secret == "" && d.ID != "" { // a version that answers without it shows it on a read
		if err := o.call(ctx, "GET", "/tenants/"+o.tenant()+"/destinations/"+d.ID, nil, &d); err != nil {
			return "", "", err
		}
	}
	return d.ID, d.Credentials.Secret, nil
}

type outpostDestination struct {
	ID          string `json:"id"`
	Credentials struct {
		Secret string `json:"secret"`
	} `json:"credentials"`
}

func (o *outpostPeer) fire(ctx context.Context, seq int64) error {
	return o.call(ctx, "POST", "/publish", map[string]any{"tenant_id": o.tenant(), "topic": peerEvent,
		"eligible_for_retry": true, "data": map[string]any{"bench": seq}}, nil)
}

func (o *outpostPeer) remove(ctx context.Context) {
	if o.tenantID != "" {
		o.call(ctx, "DELETE", "/tenants/"+o.tenant(), nil, nil)
	}
}

// outpostScheme reads Outpost's webhook deliveries. The body is the
// event's data; the event id is in X-Outpost-Event-Id. In Outpost's
// default mode X-Outpost-Signature is "v0=" and the hex HMAC-SHA256 of
// the body under the secret's bytes, one per valid secret, comma-separated;
// in its Standard Webhooks mode (DESTINATIONS_WEBHOOK_MODE=standard) the
// delivery is a Standard Webhooks one, id in webhook-id.
type outpostScheme struct{}

func (outpostScheme) verify(secret string, h http.Header, body []byte, now time.Time) error {
	if webhook.IsStandard(h) {
		return webhook.VerifyStandard([]string{secret}, h.Get(webhook.IDHeader), h.Get(webhook.TimestampHeader), h.Get(webhook.SignatureHeader), body, now)
	}
	sigs, ok := strings.CutPrefix(h.Get("X-Outpost-Signature"), "v0=")
	if !ok {
		return errors.New(`no X-Outpost-Signature of the form "v0=…"`)
	}
	return anyHex(sigs, hmacSHA256(secret, body))
}

func (outpostScheme) read(h http.Header, body []byte) (string, int64) {
	seq := dataSeq(body)
	return cmp.Or(h.Get("X-Outpost-Event-Id"), h.Get(webhook.IDHeader), strconv.FormatInt(seq, 10)), seq
}

// convoyPeer is Convoy (API /api/v1/projects/{projectID}, a project's API
// key): endpoints sharing an owner id per scenario, each with a
// subscription to peerEvent, and an event fanned out to the owner's
// endpoints per event, whose data is {"bench": seq}.
type convoyPeer struct {
	*peerClient
	owner         string
	endpoints     []string
	subscriptions []string
}

func (c *convoyPeer) open(context.Context) error {
	c.owner = "herald-bench-" + randomHex(8)
	return nil
}

func (c *convoyPeer) add(ctx context.Context, n int, url string) (string, string, error) {
	var e struct {
		Data struct {
			UID     string `json:"uid"`
			Secrets []struct {
				Value string `json:"value"`
			} `json:"secrets"`
		} `json:"data"`
	}
	if err := c.call(ctx, "POST", "/endpoints", map[string]any{"name": fmt.Sprintf("%s %d", c.owner, n), "url": url,
		"owner_id": c.owner, "advanced_signatures": true}, &e); err != nil {
		return "", "", err
	}
	c.endpoints = append(c.endpoints, e.Data.UID)
	// A fanned-out event reaches only endpoints with a subscription to its
	// type: Convoy makes none of its own on that path.
	var sub struct {
		Data struct {
			UID string `json:"uid"`
		} `json:"data"`
	}
	if err := c.call(ctx, "POST", "/subscriptions", map[string]any{"name": fmt.Sprintf("%s %d", c.owner, n), "endpoint_id": e.Data.UID,
		"filter_config": map[string]any{"event_types": []string{peerEvent}}}, &sub); err != nil {
		return "", "", err
	}
	c.subscriptions = append(c.subscriptions, sub.Data.UID)
	var secret string
	if s := e.Data.Secrets; len(s) > 0 {
		secret = s[len(s)-1].Value // the newest signs
	}
	return e.Data.UID, secret, nil
}

func (c *convoyPeer) fire(ctx context.Context, seq int64) error {
	return c.call(ctx, "POST", "/events/fanout", map[string]any{"owner_id": c.owner, "event_type": peerEvent,
		"data": map[string]any{"bench": seq}}, nil)
}

func (c *convoyPeer) remove(ctx context.Context) {
	for _, id := range c.subscriptions {
		c.call(ctx, "DELETE", "/subscriptions/"+id, nil, nil)
	}
	for _, id := range c.endpoints {
		c.call(ctx, "DELETE", "/endpoints/"+id, nil, nil)
	}
}

// convoyScheme reads Convoy's deliveries under a project's default
// signature settings (X-Convoy-Signature, SHA256, hex). The body is the
// event's data; the event id is in X-Convoy-Event-ID. An endpoint of
// advanced signatures (the default) sends "t=<unix>,v1=<hex>[,…]", each
// signature over the timestamp, a comma and the body, read by key (t need
// not come first) and refused when t is not within 5 minutes of now; a
// simple one's header is the hex HMAC of the body alone.
type convoyScheme struct{}

func (convoyScheme) verify(secret string, h http.Header, body []byte, now time.Time) error {
	v := h.Get("X-Convoy-Signature")
	if v == "" {
		return errors.New("no X-Convoy-Signature")
	}
	if !strings.Contains(v, "=") {
		return anyHex(v, hmacSHA256(secret, body))
	}
	var t string
	var sigs []string
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case k == "t":
			t = val
		case len(k) > 1 && k[0] == 'v':
			sigs = append(sigs, val)
		}
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return errors.New("X-Convoy-Signature has no t=<unix seconds>")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > webhook.StandardTolerance || d < -webhook.StandardTolerance {
		return webhook.ErrTimestamp
	}
	return anyHex(strings.Join(sigs, ","), hmacSHA256(secret, []byte(t+","+string(body))))
}

func (convoyScheme) read(h http.Header, body []byte) (string, int64) {
	seq := dataSeq(body)
	return cmp.Or(h.Get("X-Convoy-Event-ID"), strconv.FormatInt(seq, 10)), seq
}

func hmacSHA256(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// anyHex reports whether any of the comma-separated hex signatures is want,
// each compared in constant time.
func anyHex(sigs string, want []byte) error {
	matched := false
	for _, s := range strings.Split(sigs, ",") {
		got, err := hex.DecodeString(strings.TrimSpace(s))
		if err == nil && hmac.Equal(got, want) {
			matched = true
		}
	}
	if !matched {
		return webhook.ErrInvalidSignature
	}
	return nil
}

// dataSeq reads the sequence number of a body that is the event's data,
// {"bench": seq}.
func dataSeq(body []byte) int64 {
	var d struct {
		Bench int64 `json:"bench"`
	}
	json.Unmarshal(body, &d)
	return d.Bench
}
