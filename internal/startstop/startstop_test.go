package startstop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/startstop"
)

// Stop returns only once the function has returned, and the function's
// context ended at Stop, not before.
func TestStopWaitsForTheFunction(t *testing.T) {
	var ended atomic.Bool
	running := make(chan struct{})
	f := startstop.New(func(ctx context.Context) {
		close(running)
		<-ctx.Done()
		ended.Store(true)
	})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-running
	if ended.Load() {
		t.Fatal("the function returned before Stop")
	}
	f.Stop()
	if !ended.Load() {
		t.Fatal("Stop returned before the function did")
	}
	f.Stop() // stopped already: nothing to do
}

// A running service refuses a second Start; once stopped it starts again.
func TestStartTwiceRefusedRestartAfterStop(t *testing.T) {
	var runs atomic.Int32
	f := startstop.New(func(ctx context.Context) { runs.Add(1); <-ctx.Done() })
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	f.Stop()
	if err := f.Start(context.Background()); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	f.Stop()
	if n := runs.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}
}

// The function's context ends with Start's, without Stop.
func TestEndsWithStartsContext(t *testing.T) {
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	f := startstop.New(func(ctx context.Context) { <-ctx.Done(); close(ended) })
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ended
	f.Stop()
}

// A group stops all its services, and a service that refuses to start
// stops those started before it.
func TestGroup(t *testing.T) {
	var stopped atomic.Int32
	mk := func() *startstop.Func {
		return startstop.New(func(ctx context.Context) { <-ctx.Done(); stopped.Add(1) })
	}
	g := startstop.Group{mk(), mk(), mk()}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	if n := stopped.Load(); n != 3 {
		t.Fatalf("%d services stopped, want 3", n)
	}

	stopped.Store(0)
	running := mk()
	if err := running.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer running.Stop()
	first := mk()
	if err := (startstop.Group{first, running, mk()}).Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("group with a running service: %v, want ErrStarted", err)
	}
	if n := stopped.Load(); n != 1 {
		t.Fatalf("%d services stopped after the refusal, want the 1 started before it", n)
	}
}

// Every calls f once a period, the first a period on, and not after its
// context ended.
func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var calls atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			startstop.Every(ctx, time.Minute, func() { calls.Add(1) })
		}()
		synctest.Wait()
		if n := calls.Load(); n != 0 {
			t.Fatalf("%d calls at once, want none", n)
		}
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d calls in three periods, want 3", n)
		}
		cancel()
		<-done
		time.Sleep(time.Hour)
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d calls after the end, want 3", n)
		}
	})
}
