package bench

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// receiver is the bench's loopback receiver: one path per webhook, each
// delivery verified with the public webhook package and counted by event id.
type receiver struct {
	url string
	srv *http.Server

	mu        sync.Mutex
	hooks     map[int]*endpoint
	fired     map[int64]time.Time // bench sequence number → when its API call began
	latencies []time.Duration     // API call → verified receipt, first receipt of each delivery
	last      time.Time           // when the latest delivery arrived

	// A fleet's deliveries are told apart by the process that sent them
	// (see socketOwner); pids is nil when they are not.
	pids      []int
	connPID   map[string]int // sender address → pid, -1 when not found
	resolving sync.WaitGroup
	receipts  []receipt // the first receipt of each delivery
	dupFrom   []string  // the sender address of each receipt beyond the first

	// scheme reads a peer's deliveries; nil: herald's (Standard Webhooks
	// headers, the payload's id and data.metadata.bench).
	scheme scheme

	// expiry: latencies run from the payload's data.expiresAt instead (scenario
	// x), and lags from it to triggeredAt.
	expiry bool
	lags   []firingLag
}

// firingLag is, in expiry mode, one delivery's data.expiresAt and the time
// from it to the event's triggeredAt.
type firingLag struct {
	expires time.Time
	lag     time.Duration
}

// receipt is the first receipt of one delivery.
type receipt struct {
	hook int
	seq  int64         // its bench sequence number; 0 when it had none
	lat  time.Duration // API call → receipt; -1 when its call is not known
	from string        // the sender's address
}

// endpoint is one webhook's path.
type endpoint struct {
	token string
	got   map[string]int // event id → receipts
	bad   int            // deliveries whose signature did not verify
	hold  chan struct{}  // when not nil, requests wait until it closes
	// accept, when set, decides each verified delivery by its event id
	// and body: false answers 503, and it is not counted (scenario i).
	accept func(id string, body []byte) bool
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), hooks: map[int]*endpoint{}, fired: map[int64]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /r/{n}", r.receive)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: r.connState}
	go r.srv.Serve(ln)
	return r, nil
}

// close stops the receiver once the requests it is answering have their
// answers, a second at most. A receipt is counted before it is answered, so
// a sender's last deliveries may still be waiting for their answers when
// the count is complete and the bench closes the receiver: cut off, a peer
// reads an error for a delivery that arrived.
func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r.srv.Shutdown(ctx) != nil {
		r.srv.Close()
	}
}

// reset forgets everything counted, for the next scenario.
func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.hooks {
		if e.hold != nil {
			close(e.hold)
		}
	}
	r.hooks, r.fired, r.latencies, r.last = map[int]*endpoint{}, map[int64]time.Time{}, nil, time.Time{}
	r.pids, r.connPID, r.receipts, r.dupFrom = nil, nil, nil, nil
	r.expiry, r.lags = false, nil
	r.scheme = nil
}

// useScheme reads the deliveries by sc until the next reset.
func (r *receiver) useScheme(sc scheme) {
	r.mu.Lock()
	r.scheme = sc
	r.mu.Unlock()
}

// setToken sets the secret webhook n's deliveries are verified with.
func (r *receiver) setToken(n int, token string) {
	r.mu.Lock()
	r.hooks[n].token = token
	r.mu.Unlock()
}

// expiryMode measures latencies from each payload's data.expiresAt, until
// the next reset.
func (r *receiver) expiryMode() {
	r.mu.Lock()
	r.expiry = true
	r.mu.Unlock()
}

// firingLags are, in expiry mode, data.expiresAt to triggeredAt per
// delivery whose expiresAt is in [from, to).
func (r *receiver) firingLags(from, to time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, l := range r.lags {
		if !l.expires.Before(from) && l.expires.Before(to) {
			out = append(out, l.lag)
		}
	}
	return out
}

// fleet makes the receiver tell apart the deliveries of the processes pids.
func (r *receiver) fleet(pids []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pids, r.connPID = pids, map[string]int{}
}

// connState finds, while a fleet is measured, which process opened each new
// connection (while it is certainly open).
func (r *receiver) connState(c net.Conn, st http.ConnState) {
	if st != http.StateNew {
		return
	}
	r.mu.Lock()
	pids := r.pids
	if pids != nil {
		r.resolving.Add(1)
	}
	r.mu.Unlock()
	if pids == nil {
		return
	}
	from, to := c.RemoteAddr().String(), c.LocalAddr().String()
	go func() {
		defer r.resolving.Done()
		pid := socketOwner(from, to, pids)
		r.mu.Lock()
		if r.connPID != nil {
			r.connPID[from] = pid
		}
		r.mu.Unlock()
	}()
}

// sentBy returns the receipts and the senders of duplicates, with each
// sender address's pid (-1 when not known).
func (r *receiver) sentBy() ([]receipt, []string, map[string]int) {
	r.resolving.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	pids := make(map[string]int, len(r.connPID))
	for k, v := range r.connPID {
		pids[k] = v
	}
	return append([]receipt(nil), r.receipts...), append([]string(nil), r.dupFrom...), pids
}

// add registers webhook n's path and signing token; hold makes its requests
// wait until release.
func (r *receiver) add(n int, token string, hold bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &endpoint{token: token, got: map[string]int{}}
	if hold {
		e.hold = make(chan struct{})
	}
	r.hooks[n] = e
	return r.url + "/r/" + strconv.Itoa(n)
}

// release lets every held request of every path through.
func (r *receiver) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.hooks {
		if e.hold != nil {
			close(e.hold)
			e.hold = nil
		}
	}
}

// firing notes when the API call for bench sequence number seq began.
func (r *receiver) firing(seq int64, at time.Time) {
	r.mu.Lock()
	r.fired[seq] = at
	r.mu.Unlock()
}

func (r *receiver) receive(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	now := time.Now()
	if err != nil {
		return
	}
	n, _ := strconv.Atoi(req.PathValue("n"))
	r.mu.Lock()
	e := r.hooks[n]
	var hold chan struct{}
	var token string
	var accept func(string, []byte) bool
	if e != nil {
		hold, token, accept = e.hold, e.token, e.accept
	}
	sc := r.scheme
	r.mu.Unlock()
	if e == nil {
		http.Error(w, "unknown webhook", http.StatusNotFound)
		return
	}
	if hold != nil {
		select {
		case <-hold:
			now = time.Now()
		case <-req.Context().Done():
			return
		}
	}
	switch code := r.take(n, e, token, accept, sc, req.Header, body, now, req.RemoteAddr); code {
	case http.StatusUnauthorized:
		http.Error(w, "bad signature", code)
	case http.StatusServiceUnavailable:
		http.Error(w, "failing at random", code)
	default:
		w.WriteHeader(code)
	}
}

// consumed counts a message a broker's consumer read for webhook n, as
// receive counts a request: its signature verified over the exact body,
// counted by event id, timed from its API call. It reports whether the
// message verified.
func (r *receiver) consumed(n int, header http.Header, body []byte, from string) bool {
	now := time.Now()
	r.mu.Lock()
	e := r.hooks[n]
	var token string
	if e != nil {
		token = e.token
	}
	r.mu.Unlock()
	if e == nil {
		return false
	}
	return r.take(n, e, token, nil, nil, header, body, now, from) == http.StatusNoContent
}

// badMessage counts a message of webhook n that verified but was not what
// herald fired (scenario m's checks beyond the signature).
func (r *receiver) badMessage(n int) {
	r.mu.Lock()
	if e := r.hooks[n]; e != nil {
		e.bad++
	}
	r.mu.Unlock()
}

// take verifies and counts one delivery to endpoint e (webhook n) and
// returns the status its sender is answered with.
func (r *receiver) take(n int, e *endpoint, token string, accept func(string, []byte) bool, sc scheme, header http.Header, body []byte, now time.Time, from string) int {
	var verr error
	if sc != nil {
		verr = sc.verify(token, header, body, now)
	} else {
		verr = webhook.Verify(token, body, header.Get(webhook.SignatureHeader))
	}
	if verr != nil {
		r.mu.Lock()
		e.bad++
		r.mu.Unlock()
		return http.StatusUnauthorized
	}
	var p struct {
		ID   string `json:"id"`
		Data struct {
			Metadata struct {
				Bench int64 `json:"bench"`
			} `json:"metadata"`
			ExpiresAt time.Time `json:"expiresAt"`
		} `json:"data"`
		TriggeredAt time.Time `json:"triggeredAt"`
	}
	if sc != nil {
		p.ID, p.Data.Metadata.Bench = sc.read(header, body)
	} else {
		json.Unmarshal(body, &p)
	}
	if accept != nil && !accept(p.ID, body) {
		return http.StatusServiceUnavailable
	}
	r.mu.Lock()
	e.got[p.ID]++
	if e.got[p.ID] == 1 {
		rc := receipt{hook: n, seq: p.Data.Metadata.Bench, lat: -1, from: from}
		if r.expiry && !p.Data.ExpiresAt.IsZero() {
			rc.lat = now.Sub(p.Data.ExpiresAt)
			r.latencies = append(r.latencies, rc.lat)
			r.lags = append(r.lags, firingLag{p.Data.ExpiresAt, p.TriggeredAt.Sub(p.Data.ExpiresAt)})
		} else if at, ok := r.fired[p.Data.Metadata.Bench]; ok {
			rc.lat = now.Sub(at)
			r.latencies = append(r.latencies, rc.lat)
		}
		r.receipts = append(r.receipts, rc)
	} else {
		r.dupFrom = append(r.dupFrom, from)
	}
	r.last = now
	r.mu.Unlock()
	return http.StatusNoContent
}

// counts returns, over the paths in counted, the deliveries received once
// or more (unique), the receipts beyond the first (duplicated) and the bad
// signatures.
func (r *receiver) counts(counted func(n int) bool) (unique, duplicated, bad int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, e := range r.hooks {
		if !counted(n) {
			continue
		}
		unique += len(e.got)
		for _, k := range e.got {
			duplicated += k - 1
		}
		bad += e.bad
	}
	return unique, duplicated, bad
}

// deliveredUpTo counts the deliveries, to the counted webhooks, of the
// events fired with a bench sequence number up to seq.
func (r *receiver) deliveredUpTo(seq int64, counted func(n int) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rc := range r.receipts {
		if rc.seq > 0 && rc.seq <= seq && counted(rc.hook) {
			n++
		}
	}
	return n
}

func (r *receiver) lastReceipt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *receiver) latencySample() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.latencies...)
}
