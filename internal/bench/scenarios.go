package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// scenarios by name; each starts its own herald, so no figure carries over.
var scenarios = map[string]func(context.Context, Options, *receiver) ([]Result, error){
	"i": ordered,
	"p": pulled,
	"m": destinations,
	"a": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		return measure(ctx, o, r, setup{webhooks: 1}, firing{duration: o.Duration}, "a", "one webhook, as fast as the API allows")
	},
	"b": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		return measure(ctx, o, r, setup{webhooks: 10}, firing{duration: o.Duration}, "b", "fan-out to 10 webhooks, as fast as the API allows")
	},
	"c": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		var out []Result
		for _, rate := range []float64{200, 1000} {
			res, err := measure(ctx, o, r, setup{webhooks: 1}, firing{rate: rate, duration: o.Duration},
				fmt.Sprintf("c%.0f", rate), fmt.Sprintf("one webhook at %.0f events/s", rate))
			r.reset()
			out = append(out, res...)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	},
	"d": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		return measure(ctx, o, r, setup{webhooks: 10, dead: 1}, firing{duration: o.Duration},
			"d", "10 webhooks, one never answers (figures: the nine others)")
	},
	"e": backlog,
	"t": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		return measure(ctx, o, r, setup{webhooks: 1, rateLimit: throttledRate},
			firing{duration: o.Duration, events: max(1, int(o.Duration.Seconds())) * throttledRate},
			"t", fmt.Sprintf("one webhook limited to %d/s (its limit is its ceiling)", throttledRate))
	},
	"g": twoAccounts,
	"x": expiries,
	"f": func(ctx context.Context, o Options, r *receiver) ([]Result, error) {
		return measure(ctx, o, r, setup{webhooks: 1}, firing{rate: 500, duration: o.Duration},
			"f", "POST /v3/licenses at 500 requests/s (apiP99Ms)")
	},
}

// throttledRate is scenario t's limit: a pace the test suite held a fleet
// of three processes to until it was measured here instead (decision 0143).
const throttledRate = 100

// setup is a scenario's herald and webhooks.
type setup struct {
	webhooks int
	dead     int  // of them, the last dead never answer
	hold     bool // every receiver holds its requests until released
	// rateLimit, when above 0, is every webhook's rate limit: scenario t
	// measures how close to it herald keeps (one process or a fleet).
	rateLimit int
	env       []string
	// dest, when set, makes webhook i a destination of type typ with
	// config instead of an http webhook (scenario m); its deliveries
	// still count at the receiver's path i, by a broker's consumer.
	dest func(i int) (typ string, config map[string]any)
}

// firing is how a scenario fires events.
type firing struct {
	rate     float64       // events per second; 0: as fast as the API allows, with Options.Clients clients
	duration time.Duration // at most this long
	events   int           // at most this many accepted; 0: no bound
}

// maxReasons is how many distinct reasons for refused API calls a result
// keeps: enough to tell a time-out from a 503 without keeping every one.
const maxReasons = 5

// session is one scenario's running herald and what it fired.
type session struct {
	c         *child    // the first process; nil on a peer
	peer      peerAPI   // the peer's API, on a peer
	peerPIDs  []int     // the peer's processes, whose CPU is read
	procs     []*child  // every process of a fleet (--processes), c first; nil for one
	accepted1 []int     // events accepted by each of procs
	cpu0s     []float64 // CPU seconds of each of procs when the firing began
	pg        *pgMeter  // PostgreSQL's cost, when the store is PostgreSQL
	rcv       *receiver
	product   string
	hookIDs   []string // the webhooks' ids, in the receiver's path order
	hooks     int
	dead      int
	seq       atomic.Int64
	mu        sync.Mutex
	api       []time.Duration
	accepted  int
	refused   int      // API calls answered with an error, or not answered
	reasons   []string // the first few distinct reasons they were refused
	cpu0      float64
	machine0  cpuTimes // the machine's CPU when cpu0 was read
	fireStart time.Time
}

func start(ctx context.Context, o Options, rcv *receiver, s setup, name string) (*session, error) {
	env := s.env
	if o.ProfileDir != "" {
		env = append(slices.Clip(env), "HERALD_CPU_PROFILE="+filepath.Join(o.ProfileDir, "herald-"+name+".pprof"))
	}
	c, err := startChild(ctx, o.Binary, o.Database, env...)
	if err != nil {
		return nil, err
	}
	if o.MetricsDir != "" {
		c.metricsFile = filepath.Join(o.MetricsDir, "herald-"+name+".prom")
	}
	ss := &session{c: c, rcv: rcv, hooks: s.webhooks, dead: s.dead}
	if o.Processes > 1 {
		ss.procs = []*child{c}
		for i := range o.Processes - 1 {
			env := s.env
			if o.ProfileDir != "" { // a profile of each process
				env = append(slices.Clip(env), "HERALD_CPU_PROFILE="+filepath.Join(o.ProfileDir, fmt.Sprintf("herald-%s-%d.pprof", name, i+2)))
			}
			more, err := join(ctx, o.Binary, c, env...)
			if err != nil {
				ss.stop()
				return nil, fmt.Errorf("start process %d: %w", len(ss.procs)+1, err)
			}
			ss.procs = append(ss.procs, more)
		}
		ss.accepted1 = make([]int, len(ss.procs))
		pids := make([]int, len(ss.procs))
		for i, p := range ss.procs {
			pids[i] = p.cmd.Process.Pid
		}
		rcv.fleet(pids)
	}
	if err := ss.addHooks(ctx, s); err != nil {
		ss.stop()
		return nil, err
	}
	if o.Database != "" {
		if ss.pg, err = newPGMeter(ctx, c.dbURL, s.webhooks); err != nil {
			ss.stop()
			return nil, err
		}
	}
	ss.cpu0, _ = ss.usage()
	ss.machine0 = readCPUTimes()
	for _, p := range ss.procs {
		cpu, _ := p.usage()
		ss.cpu0s = append(ss.cpu0s, cpu)
	}
	return ss, nil
}

// addHooks creates the scenario's product and webhooks through the API,
// each at its own path of the receiver.
func (ss *session) addHooks(ctx context.Context, s setup) error {
	var p struct {
		ID string `json:"id"`
	}
	if _, err := ss.c.call(ctx, "POST", "/v3/products", map[string]any{"name": "bench"}, &p); err != nil {
		return err
	}
	ss.product = p.ID
	for i := range s.webhooks {
		var w struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		// The path is registered before the token is known: a delivery
		// cannot come before the webhook exists, and the token is set next.
		url := ss.rcv.add(i, "", s.hold || i >= s.webhooks-s.dead)
		create := map[string]any{"name": fmt.Sprint("bench ", i), "url": url, "events": []string{"license.created"}}
		if s.dest != nil {
			typ, config := s.dest(i)
			delete(create, "url")
			create["type"], create["config"] = typ, config
		}
		if s.rateLimit > 0 {
			create["rateLimit"] = s.rateLimit
		}
		if _, err := ss.c.call(ctx, "POST", "/v3/webhooks", create, &w); err != nil {
			return err
		}
		ss.rcv.setToken(i, w.Token)
		ss.hookIDs = append(ss.hookIDs, w.ID)
	}
	return nil
}

// stop ends every process (the first last: it drops the store).
func (s *session) stop() {
	for _, p := range slices.Backward(s.procs) {
		p.stop()
	}
	if s.procs == nil {
		s.c.stop()
	}
	if s.pg != nil {
		s.pg.close()
	}
}

// terminate ends every process and keeps the store.
func (s *session) terminate() {
	for _, p := range s.all() {
		p.terminate()
	}
}

func (s *session) all() []*child {
	if s.procs != nil {
		return s.procs
	}
	return []*child{s.c}
}

// usage is the CPU seconds of every process and the highest peak memory.
func (s *session) usage() (cpu float64, peakRSS int64) {
	if s.peer != nil {
		return peerUsage(s.peerPIDs), 0
	}
	for _, p := range s.all() {
		c, r := p.usage()
		cpu, peakRSS = cpu+c, max(peakRSS, r)
	}
	return cpu, peakRSS
}

// fireOne creates a license, which fires license.created; its metadata
// carries a sequence number by which the receiver finds when it was fired.
func (s *session) fireOne(ctx context.Context) bool {
	seq := s.seq.Add(1)
	c, i := s.c, 0
	if s.procs != nil { // round robin, as a load balancer would
		i = int(seq % int64(len(s.procs)))
		c = s.procs[i]
	}
	t0 := time.Now()
	s.rcv.firing(seq, t0)
	var err error
	if s.peer != nil {
		err = s.peer.fire(ctx, seq)
	} else {
		_, err = c.call(ctx, "POST", "/v3/licenses", map[string]any{"productId": s.product, "metadata": map[string]any{"bench": seq}}, nil)
	}
	d := time.Since(t0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.api = append(s.api, d)
	if err == nil {
		s.accepted++
		if s.procs != nil {
			s.accepted1[i]++
		}
	} else if ctx.Err() == nil { // not a call the bench itself stopped
		s.refused++
		if why := err.Error(); len(s.reasons) < maxReasons && !slices.Contains(s.reasons, why) {
			s.reasons = append(s.reasons, why)
		}
	}
	return err == nil
}

// fire fires as f says and returns how long it fired.
func (s *session) fire(ctx context.Context, f firing, clients int) time.Duration {
	start := time.Now()
	if s.fireStart.IsZero() {
		s.fireStart = start
	}
	stop := start.Add(f.duration)
	full := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return f.events > 0 && s.accepted >= f.events
	}
	var wg sync.WaitGroup
	if f.rate <= 0 {
		for range clients {
			wg.Go(func() {
				for time.Now().Before(stop) && !full() && ctx.Err() == nil {
					s.fireOne(ctx)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	// Open loop: calls start on schedule whether or not earlier ones have
	// answered (up to 1,024 in flight), as real traffic does.
	inflight := make(chan struct{}, 1024)
	sent := 0
	for now := time.Now(); now.Before(stop) && !full() && ctx.Err() == nil; now = time.Now() {
		for due := int(now.Sub(start).Seconds() * f.rate); sent < due; sent++ {
			inflight <- struct{}{}
			wg.Go(func() {
				defer func() { <-inflight }()
				s.fireOne(ctx)
			})
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	return time.Since(start)
}

// live reports whether webhook n's deliveries count (it is not a dead one).
func (s *session) live(n int) bool { return n >= 0 && n < s.hooks-s.dead }

// drain waits until every expected delivery has arrived, or none has for
// idle, or max has passed.
func (s *session) drain(ctx context.Context, idle, max time.Duration) {
	s.drainUntil(ctx, idle, max, 20*time.Millisecond, func() bool {
		unique, _, _ := s.rcv.counts(s.live)
		return unique >= s.expected()
	})
}

// drainUntil waits, looking every poll, until done, or nothing has
// arrived for idle, or max has passed.
func (s *session) drainUntil(ctx context.Context, idle, max, poll time.Duration, done func() bool) {
	deadline := time.Now().Add(max)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if done() {
			return
		}
		if last := s.rcv.lastReceipt(); !last.IsZero() && time.Since(last) > idle {
			return
		}
		time.Sleep(poll)
	}
}

func (s *session) expected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted * (s.hooks - s.dead)
}

// result computes a scenario's figures; since is when the deliveries
// measured began (the first call, or the release of a backlog).
func (s *session) result(name, title string, fired time.Duration, since time.Time, apiFrom int) Result {
	unique, dup, bad := s.rcv.counts(s.live)
	cpu, rss := s.usage()
	machine := readCPUTimes().since(s.machine0, unique)
	if s.pg != nil {
		s.pg.ended()
	}
	lat := sortedCopy(s.rcv.latencySample())
	s.mu.Lock()
	api := sortedCopy(s.api[min(apiFrom, len(s.api)):])
	accepted, refused, reasons := s.accepted, s.refused, slices.Clone(s.reasons)
	s.mu.Unlock()
	r := Result{Scenario: name, Title: title, Webhooks: s.hooks, Events: accepted, Refused: refused, RefusedFor: reasons, Deliveries: unique,
		P50MS: percentile(lat, 0.50), P95MS: percentile(lat, 0.95), P99MS: percentile(lat, 0.99),
		APIP99MS: percentile(api, 0.99), PeakRSSMB: float64(rss) / (1 << 20),
		Lost: max(0, s.expected()-unique), Duplicated: dup, BadSignatures: bad, Machine: machine}
	if fired > 0 {
		r.EventsPerSec = float64(accepted) / fired.Seconds()
	}
	if last := s.rcv.lastReceipt(); last.After(since) {
		r.DeliveriesPerSec = float64(unique) / last.Sub(since).Seconds()
	}
	if unique > 0 {
		r.CPUPer1000 = (cpu - s.cpu0) / float64(unique) * 1000
	}
	if s.procs != nil {
		r.Processes = s.byProcess(since)
	}
	return r
}

// byProcess splits a fleet's figures by process: the deliveries each made
// (its latencies and duplicates with them) and the events whose API call
// each answered (its lost with them). Process 0 holds deliveries whose
// sender was not found; there is none unless a connection closed before
// it was looked up.
func (s *session) byProcess(since time.Time) []ProcessResult {
	receipts, dups, connPID := s.rcv.sentBy()
	index := map[int]int{} // pid → 1…N
	for i, p := range s.procs {
		index[p.cmd.Process.Pid] = i + 1
	}
	proc := func(from string) int { return index[connPID[from]] } // 0 when unknown
	n := len(s.procs)
	out := make([]ProcessResult, n+1)
	lat := make([][]time.Duration, n+1)
	got := make([]int, n+1) // deliveries of the events each took
	for _, rc := range receipts {
		if !s.live(rc.hook) {
			continue
		}
		p := proc(rc.from)
		out[p].Deliveries++
		if rc.lat >= 0 {
			lat[p] = append(lat[p], rc.lat)
		}
		if rc.seq > 0 {
			got[int(rc.seq%int64(n))+1]++
		}
	}
	for _, from := range dups {
		out[proc(from)].Duplicated++
	}
	s.mu.Lock()
	accepted := slices.Clone(s.accepted1)
	s.mu.Unlock()
	last := s.rcv.lastReceipt()
	for i := range out {
		out[i].Process = i
		if i > 0 {
			out[i].Events = accepted[i-1]
			out[i].Lost = max(0, accepted[i-1]*(s.hooks-s.dead)-got[i])
			cpu, _ := s.procs[i-1].usage()
			if out[i].Deliveries > 0 {
				out[i].CPUPer1000 = (cpu - s.cpu0s[i-1]) / float64(out[i].Deliveries) * 1000
			}
		}
		if last.After(since) {
			out[i].DeliveriesPerSec = float64(out[i].Deliveries) / last.Sub(since).Seconds()
		}
		sorted := sortedCopy(lat[i])
		out[i].P50MS, out[i].P99MS = percentile(sorted, 0.50), percentile(sorted, 0.99)
	}
	if out[0].Deliveries == 0 && out[0].Duplicated == 0 {
		out = out[1:]
	}
	return out
}

// finish ends the scenario's processes and, on PostgreSQL, adds what the
// database spent to r: after the processes have ended, so that their
// connections' statistics are flushed and their CPU time counted.
func (s *session) finish(ctx context.Context, r *Result) {
	s.rcv.release() // held requests answered first, so the stop is quick
	s.terminate()
	if s.pg != nil {
		cost, err := s.pg.cost(ctx, r.Deliveries)
		if err != nil {
			r.Note = strings.TrimPrefix(r.Note+"; no PostgreSQL cost: "+err.Error(), "; ")
			return
		}
		r.Postgres = cost
	}
}

// measure runs one fire-and-deliver scenario on herald and, when a peer
// is given, the same on the peer after it.
func measure(ctx context.Context, o Options, rcv *receiver, su setup, f firing, name, title string) ([]Result, error) {
	r, err := measureHerald(ctx, o, rcv, su, f, name, title)
	if err != nil || o.Peer == nil || !peerScenarios[name[:1]] {
		return []Result{r}, err
	}
	rcv.reset()
	p, err := measurePeer(ctx, o, rcv, su, f, name, title)
	return []Result{r, p}, err
}

// measureHerald runs one fire-and-deliver scenario on a fresh herald.
func measureHerald(ctx context.Context, o Options, rcv *receiver, su setup, f firing, name, title string) (Result, error) {
	s, err := start(ctx, o, rcv, su, name)
	if err != nil {
		return Result{}, err
	}
	defer func() { rcv.release(); s.stop() }() // held requests answered first, so the stop is quick
	fmt.Fprintf(o.Log, "bench: %s: %s\n", name, title)
	fired := s.fire(ctx, f, o.Clients)
	s.drain(ctx, 15*time.Second, 5*time.Minute)
	r := s.result(name, title, fired, s.fireStart, 0)
	s.finish(ctx, &r)
	return r, nil
}

// backlog is scenario e: deliveries pile up while every receiver holds its
// requests, then the receivers let go and the backlog drains while the API
// keeps taking a light load.
func backlog(ctx context.Context, o Options, rcv *receiver) ([]Result, error) {
	const hooks = 10
	s, err := start(ctx, o, rcv, setup{webhooks: hooks, hold: true,
		// Held requests must not time out and be retried minutes later.
		env: []string{"HERALD_ATTEMPT_TIMEOUT=30m"}}, "e")
	if err != nil {
		return nil, err
	}
	defer func() { rcv.release(); s.stop() }()
	events := max(1, o.Backlog/hooks)
	fmt.Fprintf(o.Log, "bench: e: queueing %d deliveries (%d events to %d webhooks) while the receivers hold them\n", events*hooks, events, hooks)
	fired := s.fire(ctx, firing{events: events, duration: 30 * time.Minute}, o.Clients)
	s.mu.Lock()
	apiFrom := len(s.api)
	s.mu.Unlock()
	backlogSeq, backlogWant := s.seq.Load(), s.expected()
	released := time.Now()
	rcv.release()
	loadCtx, stopLoad := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		s.fire(loadCtx, firing{rate: 50, duration: 30 * time.Minute}, 1)
		close(done)
	}()
	// The light load stops once the backlog's own deliveries have arrived:
	// a herald starved of CPU may deliver slower than the load's 50 events
	// a second to ten webhooks, and would never catch up with all of them.
	s.drainUntil(ctx, 30*time.Second, 30*time.Minute, 100*time.Millisecond, func() bool {
		return rcv.deliveredUpTo(backlogSeq, s.live) >= backlogWant
	})
	stopLoad()
	<-done
	s.drain(ctx, 15*time.Second, 15*time.Minute) // the last of the light load's deliveries
	r := s.result("e", fmt.Sprintf("backlog of %d deliveries drained, API at 50 requests/s meanwhile", events*hooks), fired, released, apiFrom)
	r.Note = "deliveriesPerSec is the drain rate after release; latency counts the time held"
	s.finish(ctx, &r)
	return []Result{r}, nil
}
