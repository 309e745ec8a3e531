package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// The peers' tests drive each adapter against a loopback server that
// speaks the subset of the peer's API the bench calls and delivers, as the
// peer does, to the bench's real receiver with the peer's signature
// scheme: so the adapter's calls, the receiver's verification and its
// reading of the sequence number are checked without the peer running.

// fakeDeliverer posts a peer's deliveries from its own goroutines, as the
// peer's workers do, and waits for them when the test ends.
type fakeDeliverer struct {
	t  *testing.T
	wg sync.WaitGroup
}

func (d *fakeDeliverer) post(url string, body []byte, headers map[string]string) {
	d.wg.Go(func() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			d.t.Errorf("delivery to %s: %v", url, err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
}

// fakeOutpost speaks Outpost's /api/v1 tenants, destinations and publish,
// and delivers in its default mode: the data as the body, X-Outpost-Event-Id,
// and X-Outpost-Signature "v0=" hex(HMAC-SHA256(secret, body)) (or, when
// standard is set, in its Standard Webhooks mode).
type fakeOutpost struct {
	*httptest.Server
	d        *fakeDeliverer
	key      string
	standard bool
	mu       sync.Mutex
	tenants  map[string][]fakeDest
	events   int
}

type fakeDest struct {
	id, url, secret, owner string
	topics                 []string
}

func newFakeOutpost(t *testing.T, key string, standard bool) *fakeOutpost {
	f := &fakeOutpost{d: &fakeDeliverer{t: t}, key: key, standard: standard, tenants: map[string][]fakeDest{}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/v1/tenants/{tenant}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		id := r.PathValue("tenant")
		if _, ok := f.tenants[id]; ok {
			writeJSON(w, http.StatusOK, map[string]any{"id": id})
			return
		}
		f.tenants[id] = []fakeDest{}
		writeJSON(w, http.StatusCreated, map[string]any{"id": id})
	})
	mux.HandleFunc("POST /api/v1/tenants/{tenant}/destinations", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Type   string   `json:"type"`
			Topics []string `json:"topics"`
			Config struct {
				URL string `json:"url"`
			} `json:"config"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.Type != "webhook" || in.Config.URL == "" || len(in.Topics) == 0 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "validation error"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := r.PathValue("tenant")
		if _, ok := f.tenants[id]; !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "tenant not found"})
			return
		}
		secret := randomHex(32) // Outpost's default: 64 hex characters
		if f.standard {
			secret = webhook.StandardSecret(randomHex(24))
		}
		d := fakeDest{id: "des_" + randomHex(6), url: in.Config.URL, secret: secret, topics: in.Topics}
		f.tenants[id] = append(f.tenants[id], d)
		writeJSON(w, http.StatusCreated, map[string]any{"id": d.id, "type": "webhook", "topics": d.topics,
			"config": map[string]any{"url": d.url}, "credentials": map[string]any{"secret": d.secret}})
	})
	mux.HandleFunc("POST /api/v1/publish", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			TenantID string          `json:"tenant_id"`
			Topic    string          `json:"topic"`
			Data     json.RawMessage `json:"data"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || len(in.Data) == 0 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "validation error"})
			return
		}
		f.mu.Lock()
		f.events++
		eventID := fmt.Sprintf("evt_%d", f.events)
		dests := append([]fakeDest(nil), f.tenants[in.TenantID]...)
		f.mu.Unlock()
		var ids []string
		for _, d := range dests {
			if !containsTopic(d.topics, in.Topic) {
				continue
			}
			ids = append(ids, d.id)
			now := time.Now()
			h := map[string]string{"X-Outpost-Event-Id": eventID, "X-Outpost-Topic": in.Topic, "X-Outpost-Timestamp": now.UTC().Format(time.RFC3339)}
			if f.standard {
				h = map[string]string{webhook.IDHeader: eventID, webhook.TimestampHeader: strconv.FormatInt(now.Unix(), 10),
					webhook.SignatureHeader: webhook.SignStandard(d.secret, eventID, now.Unix(), in.Data)}
			} else {
				h["X-Outpost-Signature"] = "v0=" + hexHMAC(d.secret, in.Data)
			}
			f.d.post(d.url, in.Data, h)
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"id": eventID, "duplicate": false, "destination_ids": ids})
	})
	mux.HandleFunc("DELETE /api/v1/tenants/{tenant}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.tenants, r.PathValue("tenant"))
		writeJSON(w, http.StatusOK, map[string]any{"success": true})
	})
	f.Server = httptest.NewServer(bearer(key, mux))
	t.Cleanup(func() { f.d.wg.Wait(); f.Close() })
	return f
}

func containsTopic(topics []string, topic string) bool {
	for _, t := range topics {
		if t == "*" || t == topic {
			return true
		}
	}
	return false
}

// fakeConvoy speaks Convoy's /api/v1/projects/{projectID} endpoints and
// fan-out events, answering in Convoy's envelope, and delivers with
// advanced signatures: X-Convoy-Signature "t=<unix>,v1=<hex>" over
// "<unix>,<body>", the data as the body, X-Convoy-Event-ID.
type fakeConvoy struct {
	*httptest.Server
	d             *fakeDeliverer
	mu            sync.Mutex
	endpoints     map[string]fakeDest // topics: its subscription's event types
	subscriptions map[string]string   // id → endpoint id
	events        int
}

func newFakeConvoy(t *testing.T, key, project string) *fakeConvoy {
	f := &fakeConvoy{d: &fakeDeliverer{t: t}, endpoints: map[string]fakeDest{}, subscriptions: map[string]string{}}
	base := "/api/v1/projects/" + project
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+base+"/endpoints", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name    string `json:"name"`
			URL     string `json:"url"`
			OwnerID string `json:"owner_id"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.Name == "" || in.URL == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": false, "message": "please provide your endpoint name"})
			return
		}
		d := fakeDest{id: "01" + strings.ToUpper(randomHex(12)), url: in.URL, owner: in.OwnerID, secret: randomHex(12)}
		f.mu.Lock()
		f.endpoints[d.id] = d
		f.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"status": true, "message": "Endpoint created successfully",
			"data": map[string]any{"uid": d.id, "url": d.url, "owner_id": d.owner, "secrets": []map[string]any{{"uid": "01S", "value": d.secret}}}})
	})
	mux.HandleFunc("POST "+base+"/subscriptions", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name         string `json:"name"`
			EndpointID   string `json:"endpoint_id"`
			FilterConfig struct {
				EventTypes []string `json:"event_types"`
			} `json:"filter_config"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.Name == "" || in.EndpointID == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": false, "message": "please provide a valid endpoint id"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		d, ok := f.endpoints[in.EndpointID]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": false, "message": "failed to find endpoint by id"})
			return
		}
		id := "01SUB" + strings.ToUpper(randomHex(8))
		d.topics = in.FilterConfig.EventTypes
		if len(d.topics) == 0 {
			d.topics = []string{"*"}
		}
		f.endpoints[in.EndpointID] = d
		f.subscriptions[id] = in.EndpointID
		writeJSON(w, http.StatusCreated, map[string]any{"status": true, "message": "Subscription created successfully", "data": map[string]any{"uid": id}})
	})
	mux.HandleFunc("DELETE "+base+"/subscriptions/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		ep, ok := f.subscriptions[r.PathValue("id")]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"status": false, "message": "subscription not found"})
			return
		}
		delete(f.subscriptions, r.PathValue("id"))
		d := f.endpoints[ep]
		d.topics = nil
		f.endpoints[ep] = d
		writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "Subscription deleted successfully"})
	})
	mux.HandleFunc("POST "+base+"/events/fanout", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			OwnerID   string          `json:"owner_id"`
			EventType string          `json:"event_type"`
			Data      json.RawMessage `json:"data"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.OwnerID == "" || in.EventType == "" || len(in.Data) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": false, "message": "please provide an owner id"})
			return
		}
		var body bytes.Buffer // Convoy sends the data compacted, as its encoder writes it
		json.Compact(&body, in.Data)
		f.mu.Lock()
		f.events++
		eventID := fmt.Sprintf("01EVT%d", f.events)
		var dests []fakeDest
		for _, d := range f.endpoints {
			// Convoy matches a fanned-out event only to subscriptions of
			// its type; an endpoint without one gets nothing.
			if d.owner == in.OwnerID && containsTopic(d.topics, in.EventType) {
				dests = append(dests, d)
			}
		}
		f.mu.Unlock()
		for _, d := range dests {
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			f.d.post(d.url, body.Bytes(), map[string]string{"X-Convoy-Event-ID": eventID,
				"X-Convoy-Signature": "t=" + ts + ",v1=" + hexHMAC(d.secret, []byte(ts+","+body.String()))})
		}
		writeJSON(w, http.StatusCreated, map[string]any{"status": true, "message": "Endpoint event created successfully", "data": map[string]any{"uid": eventID}})
	})
	mux.HandleFunc("DELETE "+base+"/endpoints/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.endpoints[r.PathValue("id")]; !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"status": false, "message": "endpoint not found"})
			return
		}
		delete(f.endpoints, r.PathValue("id"))
		writeJSON(w, http.StatusOK, map[string]any{"status": true, "message": "Endpoint deleted successfully"})
	})
	f.Server = httptest.NewServer(bearer(key, mux))
	t.Cleanup(func() { f.d.wg.Wait(); f.Close() })
	return f
}

func bearer(key string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func hexHMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// runPeer measures a fan-out to hooks destinations of events events on the
// peer, with the bench's real receiver.
func runPeer(t *testing.T, p *Peer, hooks, events int) Result {
	t.Helper()
	rcv, err := newReceiver()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rcv.close)
	o := Options{Peer: p, Clients: 4, Log: io.Discard}
	r, err := measurePeer(context.Background(), o, rcv, setup{webhooks: hooks}, firing{events: events, duration: time.Minute}, "b", "fan-out")
	if err != nil {
		t.Fatalf("measurePeer: %v", err)
	}
	return r
}

func checkAllDelivered(t *testing.T, r Result, hooks, events int) {
	t.Helper()
	if r.Sender != "peer" || r.Events < events || r.Refused != 0 {
		t.Errorf("sender %q, %d events accepted, %d refused %q; want peer, at least %d, none refused", r.Sender, r.Events, r.Refused, r.RefusedFor, events)
	}
	if r.Deliveries != r.Events*hooks || r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 {
		t.Errorf("%d deliveries of %d events to %d destinations, lost %d, duplicated %d, bad signatures %d",
			r.Deliveries, r.Events, hooks, r.Lost, r.Duplicated, r.BadSignatures)
	}
	// Every receipt was timed from its own call: the sequence number was
	// read back from the peer's body.
	if r.P99MS <= 0 {
		t.Errorf("p99 %.1f ms: the receipts were not matched to their calls", r.P99MS)
	}
}

func TestOutpostPeerFansOutAndCleansUp(t *testing.T) {
	t.Parallel()
	for _, standard := range []bool{false, true} {
		t.Run(fmt.Sprint("standard=", standard), func(t *testing.T) {
			t.Parallel()
			f := newFakeOutpost(t, "outpost-key", standard)
			r := runPeer(t, &Peer{Kind: "outpost", URL: f.URL + "/api/v1", Key: "outpost-key"}, 3, 40)
			checkAllDelivered(t, r, 3, 40)
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.tenants) != 0 {
				t.Errorf("the peer kept %d of the bench's tenants", len(f.tenants))
			}
		})
	}
}

func TestConvoyPeerFansOutAndCleansUp(t *testing.T) {
	t.Parallel()
	f := newFakeConvoy(t, "convoy-key", "01PROJECT")
	r := runPeer(t, &Peer{Kind: "convoy", URL: f.URL + "/api/v1/projects/01PROJECT", Key: "convoy-key"}, 3, 40)
	checkAllDelivered(t, r, 3, 40)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.endpoints) != 0 || len(f.subscriptions) != 0 {
		t.Errorf("the peer kept %d of the bench's endpoints and %d subscriptions", len(f.endpoints), len(f.subscriptions))
	}
}

// A peer that refuses the key fails the scenario before firing, naming the
// call.
func TestPeerWithAWrongKeyFailsTheScenario(t *testing.T) {
	t.Parallel()
	f := newFakeOutpost(t, "outpost-key", false)
	rcv, err := newReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.close()
	o := Options{Peer: &Peer{Kind: "outpost", URL: f.URL + "/api/v1", Key: "wrong"}, Clients: 1, Log: io.Discard}
	_, err = measurePeer(context.Background(), o, rcv, setup{webhooks: 1}, firing{events: 1, duration: time.Minute}, "a", "one")
	if err == nil || !strings.Contains(err.Error(), "PUT /tenants/") || !strings.Contains(err.Error(), "401") {
		t.Errorf("err = %v; want the tenant's PUT refused with 401", err)
	}
}

// Convoy's scheme against the vectors Convoy publishes for its own
// verifiers (pkg/signature/testdata/signature-vectors.json, SHA256 hex,
// checked at their time, 1700000000).
func TestConvoySchemeVerifiesConvoysVectors(t *testing.T) {
	const secret = "convoy-webhook-secret"
	body := []byte(`{"event":"charge.success","amount":1000,"currency":"NGN"}`)
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name, header string
		valid        bool
	}{
		{"simple", "244449b7f48cbc2709060c9dcdc2b3aa47a78f540430579015c579fb12defbb4", true},
		{"simple tampered", "244449b7f48cbc2709060c9dcdc2b3aa47a78f540430579015c579fb12defbb0", false},
		{"advanced", "t=1700000000,v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c", true},
		{"advanced tampered", "t=1700000000,v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c550", false},
		{"t not first", "v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c,t=1700000000", true},
		{"one of two v1 valid", "t=1700000000,v1=449623e4897bbde05e35358293f97b8c2f697367ffa3e7466e98178dfba44d19,v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c", true},
		{"no v1 valid", "t=1700000000,v1=449623e4897bbde05e35358293f97b8c2f697367ffa3e7466e98178dfba44d19,v1=c7eff1833c41a2ce2e195599451b240cd282b1bc9fa387e428a9fd5a5dc74933", false},
		{"t not a number", "t=Infinity,v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c", false},
		{"no t", "v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c,v2=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c", false},
		{"numeric signature", "t=1700000000,v1=1234567890", false},
		{"missing", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("X-Convoy-Signature", tc.header)
		}
		err := convoyScheme{}.verify(secret, h, body, now)
		if (err == nil) != tc.valid {
			t.Errorf("%s: verify = %v, want valid %v", tc.name, err, tc.valid)
		}
	}
	h := http.Header{"X-Convoy-Signature": {"t=1700000000,v1=77b8b9269f25a199846a55a2bd25b3fba151c70fdae60bb1dcd87fbbc943c55c"}}
	if err := (convoyScheme{}).verify(secret, h, body, now.Add(10*time.Minute)); err == nil {
		t.Errorf("a signature 10 minutes old verified")
	}
}

// Outpost's default scheme as its documentation states it: "v0=" and the
// hex HMAC-SHA256 of the body under the secret, several comma-separated
// during a rotation.
func TestOutpostSchemeVerifiesTheDocumentedForm(t *testing.T) {
	const secret = "8b1c6f0e5a0b4f6c9d2e7a3b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
	body := []byte(`{"bench":7}`)
	good := hexHMAC(secret, body)
	other := hexHMAC("previous", body)
	for _, tc := range []struct {
		name, header string
		valid        bool
	}{
		{"one", "v0=" + good, true},
		{"current and previous", "v0=" + good + "," + other, true},
		{"previous first", "v0=" + other + "," + good, true},
		{"another secret's", "v0=" + other, false},
		{"no prefix", good, false},
		{"another body's", "v0=" + hexHMAC(secret, []byte(`{"bench":8}`)), false},
		{"missing", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("X-Outpost-Signature", tc.header)
		}
		if err := (outpostScheme{}).verify(secret, h, body, time.Now()); (err == nil) != tc.valid {
			t.Errorf("%s: verify = %v, want valid %v", tc.name, err, tc.valid)
		}
	}
	id, seq := outpostScheme{}.read(http.Header{"X-Outpost-Event-Id": {"evt_1"}}, body)
	if id != "evt_1" || seq != 7 {
		t.Errorf("read = %q, %d; want evt_1, 7", id, seq)
	}
}

// A delivery the scheme refuses is answered 401 and counted as a bad
// signature, not as a delivery.
func TestReceiverCountsAPeersBadSignature(t *testing.T) {
	rcv, err := newReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.close()
	rcv.useScheme(outpostScheme{})
	url := rcv.add(0, "right", false)
	body := []byte(`{"bench":1}`)
	for _, secret := range []string{"wrong", "right"} {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("X-Outpost-Signature", "v0="+hexHMAC(secret, body))
		req.Header.Set("X-Outpost-Event-Id", "evt_1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"wrong": 401, "right": 204}[secret]; resp.StatusCode != want {
			t.Errorf("signed with %q: %d, want %d", secret, resp.StatusCode, want)
		}
	}
	unique, dup, bad := rcv.counts(func(int) bool { return true })
	if unique != 1 || dup != 0 || bad != 1 {
		t.Errorf("unique %d, duplicated %d, bad %d; want 1, 0, 1", unique, dup, bad)
	}
}

// A peer's CPU is the sum of its processes', read from /proc.
func TestPeerUsageReadsTheProcesses(t *testing.T) {
	self := os.Getpid()
	if err := CheckPIDs([]int{self}); err != nil {
		t.Fatalf("CheckPIDs(self): %v", err)
	}
	if err := CheckPIDs([]int{self, 1 << 30}); err == nil {
		t.Errorf("CheckPIDs accepted a pid of no process")
	}
	before := peerUsage([]int{self})
	for x := 0; peerUsage([]int{self}) == before; x++ { // spins until a tick is counted
		_ = hexHMAC(strconv.Itoa(x), []byte("spin"))
	}
	if twice := peerUsage([]int{self, self}); twice <= 2*before {
		t.Errorf("the process twice: %.2f s; it had %.2f s before spinning", twice, before)
	}
	if got := peerUsage([]int{1 << 30}); got != 0 {
		t.Errorf("a process that is gone counted %.2f s", got)
	}
}

// The backlog's drain waits for the backlog's own deliveries: the receiver
// counts the deliveries of events up to a sequence number, to the webhooks
// counted, each once.
func TestReceiverCountsDeliveriesUpToASequenceNumber(t *testing.T) {
	rcv, err := newReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.close()
	rcv.useScheme(outpostScheme{})
	urls := []string{rcv.add(0, "a", false), rcv.add(1, "b", false)}
	deliver := func(hook int, seq int) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"bench":%d}`, seq))
		req, _ := http.NewRequest(http.MethodPost, urls[hook], bytes.NewReader(body))
		req.Header.Set("X-Outpost-Signature", "v0="+hexHMAC([]string{"a", "b"}[hook], body))
		req.Header.Set("X-Outpost-Event-Id", fmt.Sprintf("evt_%d", seq))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, d := range []struct{ hook, seq int }{{0, 1}, {1, 1}, {0, 2}, {0, 2}, {0, 3}, {1, 4}} {
		deliver(d.hook, d.seq)
	}
	all := func(int) bool { return true }
	for _, tc := range []struct {
		seq     int64
		counted func(int) bool
		want    int
	}{
		{2, all, 3}, // 1 to both, 2 to a (its second receipt a duplicate)
		{3, all, 4},
		{4, all, 5},
		{4, func(n int) bool { return n == 1 }, 2},
		{0, all, 0},
	} {
		if got := rcv.deliveredUpTo(tc.seq, tc.counted); got != tc.want {
			t.Errorf("deliveredUpTo(%d) = %d; want %d", tc.seq, got, tc.want)
		}
	}
}
