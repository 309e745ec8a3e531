package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// completer owns recording the outcomes of automatic attempts: in batches,
// as many at once as Config.Recorders, retried while the database is
// unreachable or its disk full. Once a batch is recorded its leases are
// dropped and recorded gives its slots back (the producer's).
type completer struct {
	cfg      *Config
	queue    Queue
	leases   *leases
	stopping *atomic.Bool // the producer's: past its lease, an outcome is given up only when stopping
	recorded func([]attempt.Outcome)
}

// run records the outcomes sent to outcomes until ctx ends, then what was
// sent before and returns once all is recorded. ctx ends once nothing more
// is sent (every attempt has ended), so that the stop's outcomes are
// recorded too.
func (c *completer) run(ctx context.Context, outcomes chan attempt.Outcome) {
	context.AfterFunc(ctx, func() { close(outcomes) })
	c.record(outcomes)
}

// Recording at low rates: a commit costs about as much for one outcome as
// for dozens (it writes the same pages), so a batch smaller than lingerBatch
// waits up to recordLinger for company. Receivers are not kept waiting: the
// attempt has been made; only its log's status and its slot wait. Under load
// batches fill while the previous one is written and never linger.
const (
	lingerBatch  = 16
	recordLinger = 10 * time.Millisecond
)

// defaultRecorders is how many batches of outcomes may be recorded at once. A
// batch's transaction spends most of its time waiting for the database
// (its round trips and its commit's flush), and the process's slots
// (Concurrency) are freed only once their outcomes are recorded: with one
// recorder at a time, on PostgreSQL under an API that kept the database
// busy, recording was busy 85% of the time and the dispatcher fell seconds
// behind (decision 0095). Batches recorded at once touch different logs,
// and take webhook locks only in id order and only to change health
// (queue.Complete), so they neither wait for nor deadlock with each other;
// the renewal of leases passes over the rows they hold (queue.RenewLeases).
const defaultRecorders = 4

// record writes outcomes in batches: whatever has arrived by the time a
// recorder is free goes into the next transaction, so under load one commit
// covers hundreds of attempts; at low rates a small batch lingers
// (recordLinger) for more. Up to Config.Recorders batches are written at once.
func (c *completer) record(outcomes <-chan attempt.Outcome) {
	const maxBatch = 512
	free := make(chan struct{}, c.cfg.Recorders)
	for range c.cfg.Recorders {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	linger := time.NewTimer(recordLinger)
	linger.Stop()
	for o := range outcomes {
		batch := make([]attempt.Outcome, 0, 64)
		batch = append(batch, o)
		closed, took := false, false
		// A batch closes when a recorder is free to take it: while all are
		// busy, arrivals join it, so batches grow with the load.
	gather:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-outcomes:
				if !ok {
					closed = true
					break gather
				}
				batch = append(batch, o)
				continue
			default:
			}
			select {
			case <-free:
				took = true
				break gather
			case o, ok := <-outcomes:
				if !ok {
					closed = true
					break gather
				}
				batch = append(batch, o)
			}
		}
		if !took {
			<-free
		}
		if len(batch) < lingerBatch && !closed {
			linger.Reset(recordLinger)
		wait:
			for len(batch) < lingerBatch {
				select {
				case o, ok := <-outcomes:
					if !ok {
						break wait
					}
					batch = append(batch, o)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		wg.Add(1)
		go func() {
			defer func() { free <- struct{}{}; wg.Done() }()
			c.complete(batch)
			c.leases.drop(batch)
			c.recorded(batch)
		}()
	}
}

// complete records a batch, retrying while the database is unreachable. If it
// stays unreachable past the lease, the logs are claimed again and delivered
// again: at least once, never lost. While the disk is full it retries past
// the lease (no claim takes the logs meanwhile; see renewLapsed), so each
// outcome is recorded once space is freed, unless herald is stopped first:
// then the logs are attempted again after the next start.
func (c *completer) complete(batch []attempt.Outcome) {
	start := c.cfg.Now()
	deadline := start.Add(c.cfg.Lease)
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		suspended, err := c.queue.Complete(ctx, batch, c.cfg.SuspendAfter)
		cancel()
		if err == nil {
			c.cfg.Metrics.recorded(len(batch), c.cfg.Now().Sub(start))
			c.cfg.Logger.Debug("recorded outcomes", "logs", len(batch), "suspended", len(suspended))
			if len(suspended) > 0 && c.cfg.OnSuspend != nil {
				c.cfg.OnSuspend(suspended)
			}
			return
		}
		// Past the lease, an outcome is given up (its log is attempted
		// again) only when stopping, or for an error a retry will not
		// mend: while the database is unavailable or its disk full, the
		// logs stay held here, their leases renewed, and no other process
		// takes them over (contact.go), so the outcome is recorded once
		// the database answers.
		full := c.leases.refusedForFullDisk(err)
		if c.cfg.Now().After(deadline) && ((!full && !c.queue.Unavailable(err)) || c.stopping.Load()) {
			c.cfg.Logger.Error("record outcomes: giving up; the logs will be attempted again", "logs", len(batch), "err", err)
			return
		}
		if !full {
			c.cfg.Logger.Warn("record outcomes: retrying", "logs", len(batch), "err", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}
