package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// Group commit, on SQLite.
//
// SQLite has one writer, so concurrent write transactions take turns, and
// each pays for its own BEGIN and COMMIT and writes the pages it touched to
// the WAL again (the same index pages, transaction after transaction). The
// committer runs the transactions waiting for the writer as one SQLite
// transaction: each in a savepoint of its own, so each is still all or
// nothing (an error rolls back to its savepoint and fails that caller only),
// and each caller is answered only after the shared COMMIT. Under load a
// commit covers dozens of API requests; alone, a transaction runs at once
// and as before (no savepoint, no waiting for company).
//
// The committer takes the waiting transactions in arrival order, so the
// dispatcher's claims and recordings, which go through InTx too, get their
// turn between the API's rather than behind all of them. A transaction
// marked WithPrecedence goes ahead of the others waiting: it waits only for
// the group already running, and the others fill its group behind it.

// maxGroup bounds the transactions one commit covers, so that one commit's
// latency stays bounded however many requests wait.
const maxGroup = 64

type groupTx struct {
	ctx  context.Context
	fn   func(*Tx) error
	done chan groupResult
}

type groupResult struct {
	err      error
	fired    bool
	kinds    []event.Kind
	panicked any // re-panicked in the caller's goroutine
	hasPanic bool
}

type committer struct {
	s      *Store
	queue  chan *groupTx
	urgent chan *groupTx // WithPrecedence: taken before queue

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup

	// What the writer has done, for Gauges: its groups, the transactions
	// in them, and the time it spent on them (nanoseconds).
	groups, txs, busy atomic.Int64
}

// WriterStats is what SQLite's one writer has done since the store opened:
// the commits it made (each a group of transactions; a group that failed
// counts too), the transactions they carried, and the time it spent on
// them. Busy growing by nearly a
// second a second means writes queue for the writer: it, not the
// machine's cores, bounds the process (decision 0113, docs/scaling.md).
type WriterStats struct {
	Commits, Transactions int64
	Busy                  time.Duration
}

func (c *committer) stats() WriterStats {
	return WriterStats{Commits: c.groups.Load(), Transactions: c.txs.Load(), Busy: time.Duration(c.busy.Load())}
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, queue: make(chan *groupTx, 1024), urgent: make(chan *groupTx, 64)}
	c.wg.Add(1)
	go c.run()
	return c
}

// errClosed answers a transaction begun after Close.
var errClosed = errors.New("store is closed")

// do runs fn in the next group and returns its result once the group has
// committed (or failed).
func (c *committer) do(ctx context.Context, fn func(*Tx) error) error {
	g := &groupTx{ctx: ctx, fn: fn, done: make(chan groupResult, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if precedes(ctx) {
		c.urgent <- g
	} else {
		c.queue <- g
	}
	c.mu.Unlock()
	// Answered only once its fate is known, even if ctx ends meanwhile: a
	// transaction that has begun runs to its commit or rollback.
	r := <-g.done
	if r.hasPanic {
		panic(r.panicked)
	}
	return r.err
}

// close lets the queued transactions run, then stops the committer.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.queue)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *committer) run() {
	defer c.wg.Done()
	for {
		first, ok := c.next()
		if !ok {
			return
		}
		began := time.Now()
		group := []*groupTx{first}
		c.fill(&group, c.urgent)
		c.fill(&group, c.queue)
		c.commit(group, began)
		// Between transactions the writer's connection is free: prepare
		// for good the statements the group used unprepared.
		prepared := time.Now()
		c.s.writeStmts.prepareWanted(context.Background(), c.s.writer)
		c.busy.Add(int64(time.Since(prepared)))
	}
}

// next waits for the first transaction of a group, one WithPrecedence
// before any other; false once closed and nothing is left.
func (c *committer) next() (*groupTx, bool) {
	select {
	case g := <-c.urgent:
		return g, true
	default:
	}
	select {
	case g := <-c.urgent:
		return g, true
	case g, ok := <-c.queue:
		if ok {
			return g, true
		}
	}
	// Closed: do admits no more, so urgent holds all that is left (one
	// sent before the close may arrive after the first look, and the
	// second look may pick the closed queue over it).
	select {
	case g := <-c.urgent:
		return g, true
	default:
		return nil, false
	}
}

// fill adds to a group what waits in ch, without waiting, up to maxGroup.
func (c *committer) fill(group *[]*groupTx, ch chan *groupTx) {
	for len(*group) < maxGroup {
		select {
		case g, ok := <-ch:
			if !ok {
				return
			}
			*group = append(*group, g)
		default:
			return
		}
	}
}

// commit runs a group as one transaction, begun at began, and answers each
// of its callers; the writer's figures count it before any caller hears.
func (c *committer) commit(group []*groupTx, began time.Time) {
	live := group[:0]
	for _, g := range group {
		if err := g.ctx.Err(); err != nil { // its caller gave up before it began
			g.done <- groupResult{err: fmt.Errorf("begin: %w", err)}
			continue
		}
		live = append(live, g)
	}
	if len(live) == 0 {
		return
	}
	sqltx, err := c.s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		for _, g := range live {
			g.done <- groupResult{err: fmt.Errorf("begin: %w", err)}
		}
		return
	}
	// One Tx for the group: statements prepared once serve all of it.
	tx := &Tx{s: c.s, tx: sqltx, run: sqltx, detached: true}
	results := make([]groupResult, len(live))
	// Each caller's logs handed over (handoff.go) are its own: given back
	// when its savepoint is rolled back, taken once the group commits.
	h := c.s.handoffNow()
	handoffs := make([]*handoffState, len(live))
	defer func() {
		for _, st := range handoffs {
			if st != nil && len(st.handed) > 0 {
				st.h.Abandon(st.handed, false) // not taken: the group did not commit
			}
		}
	}()
	alone := len(live) == 1
	var failed error // the group could not go on: every caller gets it
	for i, g := range live {
		if !alone {
			if err := tx.savepoint(`SAVEPOINT grp`); err != nil {
				failed = fmt.Errorf("savepoint: %w", err)
				break
			}
		}
		tx.fired, tx.kinds, tx.handoff = false, nil, nil
		if h != nil {
			tx.handoff = &handoffState{h: h}
			handoffs[i] = tx.handoff
		}
		r := run(g, tx)
		if r.err != nil || r.hasPanic {
			if st := handoffs[i]; st != nil {
				st.h.Abandon(st.handed, false)
				handoffs[i] = nil
			}
			if alone {
				results[i] = r
				break
			}
			if err := tx.savepoint(`ROLLBACK TO grp`); err != nil {
				// SQLite may have rolled back the whole transaction (as it
				// may for SQLITE_FULL); the caller's error says why.
				failed = fmt.Errorf("roll back to savepoint: %w", errors.Join(err, r.err))
				break
			}
		}
		if !alone {
			if err := tx.savepoint(`RELEASE grp`); err != nil {
				failed = fmt.Errorf("release savepoint: %w", err)
				break
			}
		}
		r.fired = r.err == nil && !r.hasPanic && tx.fired
		if r.err == nil && !r.hasPanic {
			r.kinds = tx.kinds
		}
		results[i] = r
	}
	switch {
	case alone && (results[0].err != nil || results[0].hasPanic):
		sqltx.Rollback()
	case failed != nil:
		sqltx.Rollback()
	default:
		// A COMMIT refused (SQLITE_FULL: no space for the WAL) leaves no
		// transaction open: the driver rolls back whatever is left of it,
		// so the writer begins the next group afresh.
		if err := sqltx.Commit(); err != nil {
			failed = fmt.Errorf("commit: %w", err)
		} else if tx.changed {
			c.s.wrote()
		}
	}
	if failed == nil {
		for i, st := range handoffs {
			if st != nil {
				st.h.Take(st.handed)
				handoffs[i] = nil
			}
		}
	}
	// The dispatcher is woken before any caller hears its commit went
	// through, so that a firing's InTx returns with the wake-up made (as it
	// does on PostgreSQL).
	fired := false
	for i := range live {
		r := &results[i]
		if failed != nil && r.err == nil && !r.hasPanic {
			*r = groupResult{err: failed}
		}
		fired = fired || r.fired
		if failed == nil {
			c.s.firedKinds(r.kinds)
		}
	}
	if fired && failed == nil {
		c.s.wake()
		c.s.eng.announce()
	}
	c.groups.Add(1)
	c.txs.Add(int64(len(live)))
	c.busy.Add(int64(time.Since(began)))
	for i, g := range live {
		g.done <- results[i]
	}
}

// savepoint runs one of a group's savepoint statements, prepared like the
// callers' (parsed at each use, they were a thirtieth of herald's CPU under
// load). Not through Exec: it changes no rows, whatever the driver's count
// of the last change says.
func (tx *Tx) savepoint(q string) error {
	ctx := context.Background()
	var err error
	if st := tx.stmt(ctx, q); st != nil {
		_, err = st.ExecContext(ctx)
	} else {
		_, err = tx.tx.ExecContext(ctx, q)
	}
	return err
}

// run calls one caller's fn, turning a panic into a result so that the
// group goes on and the caller panics in its own goroutine.
func run(g *groupTx, tx *Tx) (r groupResult) {
	defer func() {
		if p := recover(); p != nil {
			r = groupResult{panicked: p, hasPanic: true}
		}
	}()
	return groupResult{err: g.fn(tx)}
}

type precedenceKey struct{}

// WithPrecedence returns ctx marking the write transactions run under it
// (InTx) as going ahead of the others waiting for SQLite's one writer: for
// work whose lateness is the product's promise (an expiry fired within a
// second of its instant) beside work that a moment's wait costs little (the
// records of attempts). Meant for few transactions at once (the expiry
// runner's two batches): all that are marked go first, up to a whole
// group, and the others fill each group behind them. PostgreSQL, with no
// one writer, ignores it.
func WithPrecedence(ctx context.Context) context.Context {
	return context.WithValue(ctx, precedenceKey{}, true)
}

func precedes(ctx context.Context) bool {
	p, _ := ctx.Value(precedenceKey{}).(bool)
	return p
}
