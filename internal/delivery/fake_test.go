package delivery_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/queue"
)

// queue.Delivery is the Store the server gives the dispatcher.
var _ delivery.Store = queue.Delivery{}

// fakeQueue is an in-memory delivery.Queue, for dispatcher tests without a
// database. It keeps the promises the dispatcher relies on: a claim takes
// only due logs, within its bounds, and holds them under its lease until the
// lease ends; a renewal extends only leases still held; an automatic outcome
// under a lease that was taken over is dropped; a release makes held logs due
// at once, or at its NextAt; send slots are handed out from one next free
// slot per webhook, as the store's throttle does. It keeps no history and no health: those are the store's, tested
// on both engines by storetest. Resends and recoveries are not faked: the
// embedded Store is nil, so a test that reaches them fails at once.
type fakeQueue struct {
	delivery.Store

	now func() time.Time

	mu       sync.Mutex
	logs     []*fakeLog        // in the order added: the oldest first
	outcomes []attempt.Outcome // recorded, in order
	renewals []renewal
	released [][]string           // the leases of each ReleaseHeld
	tat      map[string]time.Time // each throttled webhook's next free send slot
	grants   []int                // the slots each ReserveSends granted
	waiter   chan struct{}        // closed by wake
	hold     chan struct{}        // while open, Complete waits (a recording held up)
	// completing counts the Complete calls under way; mostCompleting is
	// the most there have been at once.
	completing, mostCompleting int
	claims                     int    // Claim calls made
	beats                      int    // Beat calls that landed
	beatsFail                  bool   // while set, every Beat fails
	loseNext                   bool   // the next claim takes its logs and reports an error
	lost                       string // the lease of the claim that did
}

// Unavailable: the fake's errors are a test's own, none of them passing.
func (q *fakeQueue) Unavailable(error) bool { return false }

// WebhookReach: the fake reaches every webhook as a plain one, the full
// body over the Sender's client.
func (q *fakeQueue) WebhookReach(context.Context, string) (attempt.Reach, error) {
	return attempt.Reach{}, nil
}

// ReachGeneration: the fake's webhooks never change their reach.
func (q *fakeQueue) ReachGeneration() uint64 { return 0 }

// fakeLog is one log: what an attempt needs, and where it stands.
type fakeLog struct {
	claim  attempt.Claim // Lease and AttemptCount kept current
	status attempt.LogStatus
	due    time.Time // when queued or retrying: when due; when pending: when its lease ends
}

// renewal is one RenewLeases call: when (on the queue's clock), until when,
// and how many leases it extended.
type renewal struct {
	at, until time.Time
	n         int64
}

func newFakeQueue(now func() time.Time) *fakeQueue {
	return &fakeQueue{now: now}
}

// claimed is how many claims the dispatcher has made.
func (q *fakeQueue) claimed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claims
}

// add queues a log for c's webhook, due now.
func (q *fakeQueue) add(c attempt.Claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c.Lease = ""
	status := attempt.Queued
	if c.AttemptCount > 0 {
		status = attempt.Retrying
	}
	q.logs = append(q.logs, &fakeLog{claim: c, status: status, due: q.now()})
	q.wakeLocked()
}

func (q *fakeQueue) find(id string) *fakeLog {
	for _, l := range q.logs {
		if l.claim.LogID == id {
			return l
		}
	}
	return nil
}

// log returns a copy of a log's state.
func (q *fakeQueue) log(id string) fakeLog {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.find(id); l != nil {
		return *l
	}
	return fakeLog{}
}

// recorded returns the outcomes recorded so far.
func (q *fakeQueue) recorded() []attempt.Outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.outcomes)
}

func (q *fakeQueue) renewed() []renewal {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.renewals)
}

// recording says how many Complete calls are under way, and the most
// there have been at once.
func (q *fakeQueue) recording() (now, most int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.completing, q.mostCompleting
}

// holdRecording makes Complete wait until the returned func is called.
func (q *fakeQueue) holdRecording() (letGo func()) {
	ch := make(chan struct{})
	q.mu.Lock()
	q.hold = ch
	q.mu.Unlock()
	return sync.OnceFunc(func() { close(ch) })
}

// loseNextClaim makes the next claim take its logs and report an error, as
// a claim whose commit's answer was lost does.
func (q *fakeQueue) loseNextClaim() {
	q.mu.Lock()
	q.loseNext = true
	q.mu.Unlock()
}

func (q *fakeQueue) Claim(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims++
	perHook, perAccount := map[string]int{}, map[string]int{}
	var out []attempt.Claim
	for _, l := range q.logs {
		if len(out) >= p.Limit {
			break
		}
		due := (l.status == attempt.Queued || l.status == attempt.Retrying || (l.status == attempt.Pending && !p.NoTakeover)) && !l.due.After(p.Now)
		hook, account := l.claim.WebhookID, l.claim.AccountID
		if !due || slices.Contains(p.Exclude, hook) || perHook[hook] >= bound(p.Room, hook, p.PerWebhook) ||
			(p.PerAccount > 0 && perAccount[account] >= bound(p.AccountRoom, account, p.PerAccount)) {
			continue
		}
		perHook[hook]++
		perAccount[account]++
		takenOver := l.status == attempt.Pending
		l.status, l.due, l.claim.Lease = attempt.Pending, p.LeaseUntil, p.Lease
		c := l.claim
		c.TakenOver = takenOver
		out = append(out, c)
	}
	if q.loseNext {
		q.loseNext, q.lost = false, p.Lease
		return nil, errors.New("claim due logs: connection reset after the commit")
	}
	return out, nil
}

// bound is room[key] when room names key, else def.
func bound(room map[string]int, key string, def int) int {
	if n, ok := room[key]; ok {
		return n
	}
	return def
}

func (q *fakeQueue) RenewLeases(ctx context.Context, held []attempt.Held, until time.Time) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, h := range held {
		if l := q.find(h.LogID); l != nil && l.status == attempt.Pending && l.claim.Lease == h.Lease {
			l.due = until
			n++
		}
	}
	q.renewals = append(q.renewals, renewal{at: q.now(), until: until, n: n})
	return n, nil
}

func (q *fakeQueue) Beat(ctx context.Context, process string, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.beatsFail {
		return errors.New("beat: connection refused")
	}
	q.beats++
	return nil
}

func (q *fakeQueue) EndBeats(ctx context.Context, process string, before time.Time) error { return nil }

func (q *fakeQueue) Complete(ctx context.Context, outs []attempt.Outcome, suspendAfter int) ([]attempt.Suspension, error) {
	q.mu.Lock()
	hold := q.hold
	q.completing++
	q.mostCompleting = max(q.mostCompleting, q.completing)
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.completing--
		q.mu.Unlock()
	}()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, o := range outs {
		l := q.find(o.LogID)
		if l == nil || (o.Trigger == attempt.TriggerAutomatic && (l.status != attempt.Pending || l.claim.Lease != o.Lease)) {
			continue // deleted, or its lease taken over: dropped
		}
		l.claim.Lease = ""
		switch o.Result {
		case attempt.Delivered:
			l.status = attempt.Succeeded
		case attempt.Retry:
			l.status, l.due = attempt.Retrying, o.NextAt
			l.claim.AttemptCount++
		case attempt.Exhausted:
			l.status = attempt.Failed
			l.claim.AttemptCount++
		case attempt.Cancel:
			l.status = attempt.Cancelled
		case attempt.Release:
			l.status, l.due = released(l), q.now()
			if o.NextAt.After(l.due) {
				l.due = o.NextAt // given back to wait for its webhook's send slot
			}
			q.wakeLocked()
		default:
			return nil, errors.New("fake queue: no resends here")
		}
		q.outcomes = append(q.outcomes, o)
	}
	return nil, nil
}

// released is the status a log held and let go returns to.
func released(l *fakeLog) attempt.LogStatus {
	if l.claim.AttemptCount == 0 {
		return attempt.Queued
	}
	return attempt.Retrying
}

// ReserveSends hands out send slots interval apart from one next free
// slot per webhook, as the store does.
func (q *fakeQueue) ReserveSends(ctx context.Context, webhookID string, interval time.Duration, n int, now, until time.Time) (attempt.Grant, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tat == nil {
		q.tat = map[string]time.Time{}
	}
	start := q.tat[webhookID]
	if start.Before(now) {
		start = now
	}
	count := 0
	if !start.After(until) {
		count = min(n, int(until.Sub(start)/interval)+1)
	}
	q.tat[webhookID] = start.Add(time.Duration(count) * interval)
	q.grants = append(q.grants, count)
	return attempt.Grant{First: start, Interval: interval, Count: count, Next: q.tat[webhookID]}, nil
}

func (q *fakeQueue) ReleaseHeld(ctx context.Context, leases []string) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.released = append(q.released, slices.Clone(leases))
	var n int64
	for _, l := range q.logs {
		if l.status == attempt.Pending && slices.Contains(leases, l.claim.Lease) {
			l.status, l.due, l.claim.Lease = released(l), q.now(), ""
			n++
		}
	}
	if n > 0 {
		q.wakeLocked()
	}
	return n, nil
}

func (q *fakeQueue) NextDue(ctx context.Context) (time.Time, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var next time.Time
	found := false
	for _, l := range q.logs {
		if (l.status == attempt.Queued || l.status == attempt.Retrying || l.status == attempt.Pending) && (!found || l.due.Before(next)) {
			next, found = l.due, true
		}
	}
	return next, found, nil
}

func (q *fakeQueue) Wait() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiter == nil {
		q.waiter = make(chan struct{})
	}
	return q.waiter
}

// wakeLocked closes the waiters' channel. q.mu is held.
func (q *fakeQueue) wakeLocked() {
	if q.waiter != nil {
		close(q.waiter)
		q.waiter = nil
	}
}

func (q *fakeQueue) StillHeld(ctx context.Context, held []attempt.Held) (map[attempt.Held]bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	found := map[attempt.Held]bool{}
	for _, h := range held {
		if l := q.find(h.LogID); l != nil && l.status == attempt.Pending && l.claim.Lease == h.Lease {
			found[h] = true
		}
	}
	return found, nil
}

// pipeReceiver is a receiver reached over net.Pipe rather than a socket:
// inside a testing/synctest bubble, a goroutine waiting on a socket keeps
// the fake clock from moving, one waiting on a pipe does not. Dial is the
// dispatcher's Config.Dial; any URL's host reaches it.
type pipeReceiver struct {
	URL   string
	conns chan net.Conn
	done  chan struct{}
	close func()

	mu  sync.Mutex
	ids []string // webhook-id of each request, in order
}

// newPipeReceiver serves h until the test ends, and at the end waits for
// its handlers to return, so that none is left asleep when the bubble's
// clock stops.
func newPipeReceiver(t *testing.T, h http.HandlerFunc) *pipeReceiver {
	t.Helper()
	r := &pipeReceiver{URL: "http://receiver.test/hook", conns: make(chan net.Conn), done: make(chan struct{})}
	r.close = sync.OnceFunc(func() { close(r.done) })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		r.mu.Unlock()
		h(w, req)
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(r)
	}()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shut the receiver down: %v", err)
		}
		<-served
	})
	return r
}

// Dial connects to the receiver.
func (r *pipeReceiver) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case r.conns <- server:
		return client, nil
	case <-r.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, errors.New("dial receiver.test: receiver closed")
}

// Count is how many requests have reached the handler.
func (r *pipeReceiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// IDs are the webhook-id headers of the requests so far.
func (r *pipeReceiver) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// holdingReceiver is a receiver that holds each request whose webhook-id
// held names until release, and answers the others 204 at once. The hold
// is let go when the test ends, before the receiver closes (closing waits
// for the requests it holds).
func holdingReceiver(t *testing.T, held func(id string) bool) (rcv *pipeReceiver, release func()) {
	hold := make(chan struct{})
	rcv = newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if held(r.Header.Get("webhook-id")) {
			<-hold
		}
		w.WriteHeader(http.StatusNoContent)
	})
	release = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	return rcv, release
}

// sentOnce fails the test for each delivery the receiver got more than
// once.
func (r *pipeReceiver) sentOnce(t *testing.T) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range r.IDs() {
		seen[id]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times; want once", id, n)
		}
	}
}

// Accept, Close and Addr make the receiver its server's net.Listener.
func (r *pipeReceiver) Accept() (net.Conn, error) {
	select {
	case c := <-r.conns:
		return c, nil
	case <-r.done:
		return nil, net.ErrClosed
	}
}

func (r *pipeReceiver) Close() error {
	r.close()
	return nil
}

func (r *pipeReceiver) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "receiver.test" }

// waitFor sleeps on the bubble's clock until cond holds, and fails the test
// after a minute of it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after a minute", what)
		}
	}
}
