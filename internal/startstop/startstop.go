// Package startstop owns how herald's background services start and stop.
// A service is a loop that runs until its context ends: the dispatcher's
// claims, its lease keeper and recorder, recoveries, the email outbox,
// expiries, retention, reminders, the queue's vacuum, partitions, the
// shared rate limits. Each is written as a function of a context, and
// started and stopped here, the same way for all: Start runs it in a
// goroutine of its own, Stop ends its context and returns once it has
// returned, so a caller that stopped a service knows it is done. It
// imports nothing of herald's.
package startstop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Service is a background service with a start and a stop.
type Service interface {
	// Start starts the service and returns at once; it runs until ctx
	// ends or Stop. A service already running refuses (ErrStarted).
	Start(ctx context.Context) error
	// Stop ends the service and returns once it has ended. Stopping a
	// service not running does nothing.
	Stop()
}

// ErrStarted refuses to start a service already running.
var ErrStarted = errors.New("startstop: already running")

// Func is a Service that runs one function: it must return once its
// context ends. A Func may be started again once stopped.
type Func struct {
	run func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc // nil while not running
	done   chan struct{}      // closed when run returns
}

// New returns a Service that runs run.
func New(run func(ctx context.Context)) *Func { return &Func{run: run} }

// Start runs the function in a goroutine of its own, with a context that
// ends when ctx ends or at Stop.
func (f *Func) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		return ErrStarted
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	f.cancel, f.done = cancel, done
	go func() {
		defer close(done)
		f.run(ctx)
	}()
	return nil
}

// Stop ends the function's context and waits until it has returned.
func (f *Func) Stop() {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	f.mu.Lock()
	if f.done == done { // not started again meanwhile
		f.cancel, f.done = nil, nil
	}
	f.mu.Unlock()
}

// Group is services started together and stopped together.
type Group []Service

// Start starts the services in order. If one refuses, those started are
// stopped and its error returned.
func (g Group) Start(ctx context.Context) error {
	for i, s := range g {
		if err := s.Start(ctx); err != nil {
			g[:i].Stop()
			return err
		}
	}
	return nil
}

// Stop stops every service at once and returns once all have ended: none
// waits for another's end to be asked to stop.
func (g Group) Stop() {
	var wg sync.WaitGroup
	for _, s := range g {
		wg.Go(s.Stop)
	}
	wg.Wait()
}

// Every calls f every d until ctx ends, the first time d from now: the
// loop of a service that does its work on a period.
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}
