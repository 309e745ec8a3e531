package bench

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
)

// The two-accounts scenario, g: account B's one healthy webhook, fired at a
// steady rate, measured twice on fresh heralds: alone, and while account A
// has 50 webhooks whose receivers never answer (each attempt ends at the 3 s
// time-out) and a backlog of first attempts for them. The figures are B's.
const (
	fairHanging  = 50
	fairRate     = 100 // B's events per second
	fairTimeout  = "3s"
	fairPathOfA  = 1000 // A's receivers are paths 1000…; B's is path 0
	fairAccountB = "b@example.com"
)

func twoAccounts(ctx context.Context, o Options, rcv *receiver) ([]Result, error) {
	var out []Result
	for _, loaded := range []bool{false, true} {
		res, err := fairShare(ctx, o, rcv, loaded)
		rcv.reset()
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// createAccounts makes the fresh store's accounts before herald starts
// (herald then creates none): A, whose API token is tokenA, and B, whose
// token it returns. The key file is made here, and herald reads it.
func createAccounts(tokenB *string) prepareFunc {
	return func(ctx context.Context, dbURL, keyFile, tokenA string) error {
		key, _, err := secret.LoadOrCreateKeyFile(keyFile)
		if err != nil {
			return err
		}
		st, err := store.Open(ctx, dbURL, store.Options{Key: key})
		if err != nil {
			return err
		}
		defer st.Close()
		*tokenB = auth.NewAPIToken()
		for _, a := range []struct{ name, email, token string }{
			{"A", "bench@example.com", tokenA}, {"B", fairAccountB, *tokenB},
		} {
			if _, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: a.name, OwnerEmail: a.email,
				PasswordHash: "x", TokenHash: auth.HashToken(a.token)}); err != nil {
				return fmt.Errorf("create account %s: %w", a.name, err)
			}
		}
		return nil
	}
}

func fairShare(ctx context.Context, o Options, rcv *receiver, loaded bool) (Result, error) {
	name, title := "g-alone", fmt.Sprintf("account B, one webhook at %d events/s, alone", fairRate)
	if loaded {
		name, title = "g-loaded", fmt.Sprintf("account B, one webhook at %d events/s, while A's %d webhooks hang to the %s time-out with a backlog",
			fairRate, fairHanging, fairTimeout)
	}
	var tokenB string
	c, err := startChildWith(ctx, o.Binary, o.Database, createAccounts(&tokenB), "HERALD_ATTEMPT_TIMEOUT="+fairTimeout)
	if err != nil {
		return Result{}, err
	}
	defer func() { rcv.release(); c.stop() }()
	fmt.Fprintf(o.Log, "bench: %s: %s\n", name, title)
	s := &session{c: c.as(tokenB), rcv: rcv, hooks: 1}
	if err := s.addWebhooks(ctx, 0, 1, false); err != nil {
		return Result{}, err
	}
	if loaded {
		a := &session{c: c, rcv: rcv}
		if err := a.addWebhooks(ctx, fairPathOfA, fairHanging, true); err != nil {
			return Result{}, err
		}
		events := max(4, o.Backlog/1000)
		fmt.Fprintf(o.Log, "bench: %s: A fires %d events (%d deliveries that hang)\n", name, events, events*fairHanging)
		if err := a.fireUnmeasured(ctx, events, o.Clients); err != nil {
			return Result{}, err
		}
	}
	if o.Database != "" {
		hooks := 1
		if loaded {
			hooks += fairHanging
		}
		if s.pg, err = newPGMeter(ctx, c.dbURL, hooks); err != nil {
			return Result{}, err
		}
		defer s.pg.close()
	}
	s.cpu0, _ = c.usage()
	s.machine0 = readCPUTimes()
	fired := s.fire(ctx, firing{rate: fairRate, duration: o.Duration}, 1)
	s.drain(ctx, 15*time.Second, 5*time.Minute)
	r := s.result(name, title, fired, s.fireStart, 0)
	if loaded {
		r.Note = "figures are account B's; A's deliveries never arrive"
	}
	s.finish(ctx, &r)
	return r, nil
}

// addWebhooks creates a product and n webhooks of the session's account,
// at the receiver's paths from, from+1, …; hold makes their receivers hold
// every request (until the scenario ends, so herald's time-out ends it).
func (s *session) addWebhooks(ctx context.Context, from, n int, hold bool) error {
	var p struct {
		ID string `json:"id"`
	}
	if _, err := s.c.call(ctx, "POST", "/v3/products", map[string]any{"name": "bench"}, &p); err != nil {
		return err
	}
	s.product = p.ID
	for i := from; i < from+n; i++ {
		var w struct {
			Token string `json:"token"`
		}
		url := s.rcv.add(i, "", hold)
		if _, err := s.c.call(ctx, "POST", "/v3/webhooks", map[string]any{"name": fmt.Sprint("bench ", i), "url": url,
			"events": []string{"license.created"}}, &w); err != nil {
			return err
		}
		s.rcv.mu.Lock()
		s.rcv.hooks[i].token = w.Token
		s.rcv.mu.Unlock()
	}
	return nil
}

// fireUnmeasured fires n events of the session's account with clients
// clients, without a bench sequence number: their deliveries count in no
// figure.
func (s *session) fireUnmeasured(ctx context.Context, n, clients int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range clients {
		wg.Go(func() {
			for range next {
				if _, err := s.c.call(ctx, "POST", "/v3/licenses", map[string]any{"productId": s.product}, nil); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
