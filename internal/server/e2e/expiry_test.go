package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
)

// expiryDelivery is an expiry event as a receiver got it.
type expiryDelivery struct {
	ID          string
	Event       string
	LicenseID   string
	ExpiresAt   time.Time
	TriggeredAt time.Time
}

// expiryDeliveries reads the receiver's deliveries, in arrival order.
func expiryDeliveries(t *testing.T, rcv *heraldtest.Receiver) []expiryDelivery {
	t.Helper()
	var out []expiryDelivery
	for _, r := range rcv.Requests() {
		var p struct {
			ID, Event, TriggeredAt string
			Data                   struct{ ID, ExpiresAt string }
		}
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatalf("delivery %s: %v", r.Body, err)
		}
		exp, err1 := time.Parse(time.RFC3339Nano, p.Data.ExpiresAt)
		trig, err2 := time.Parse(time.RFC3339Nano, p.TriggeredAt)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("delivery %s: %v", r.Body, err)
		}
		out = append(out, expiryDelivery{p.ID, p.Event, p.Data.ID, exp, trig})
	}
	return out
}

// A running herald fires both events at their instants by itself (it
// wakes at the next due instant: nothing here wakes it, and its periodic
// look is an hour away), and by the moved clock for instants days away; the
// lead time is the account's.
func TestExpiryEventsReachReceiversOnTime(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		clock := heraldtest.NewClock()
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL, Now: clock.Now, ExpiryCheck: time.Hour})
		ctx := context.Background()
		rcv, _ := watch(t, h, string(event.LicenseExpiringSoon), string(event.LicenseExpired))
		p, err := h.API.CreateProduct(ctx, "P", nil)
		if err != nil {
			t.Fatal(err)
		}
		// B expires 2 s from now: its expiring-soon at once, its expired
		// when the runner's timer wakes it.
		bExp := clock.Now().Add(2 * time.Second).Truncate(time.Millisecond)
		b, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, ExpiresAt: &bExp})
		if err != nil {
			t.Fatal(err)
		}
		// A expires in 30 days: nothing yet.
		aExp := clock.Now().Add(30 * 24 * time.Hour).Truncate(time.Millisecond)
		a, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, ExpiresAt: &aExp})
		if err != nil {
			t.Fatal(err)
		}
		heraldtest.Eventually(t, 10*time.Second, "B's two events", func() bool { return rcv.Count() >= 2 })
		got := expiryDeliveries(t, rcv)
		if len(got) != 2 || got[0].Event != string(event.LicenseExpiringSoon) || got[1].Event != string(event.LicenseExpired) ||
			got[0].LicenseID != b.ID || got[1].LicenseID != b.ID {
			t.Fatalf("got %+v; want B's expiring-soon, then its expired", got)
		}
		if !got[1].ExpiresAt.Equal(bExp) || got[1].TriggeredAt.Before(bExp) {
			t.Errorf("B's expired carries expiresAt %v, triggeredAt %v; want %v, and fired at or after it", got[1].ExpiresAt, got[1].TriggeredAt, bExp)
		}

		// The lead time is the account's: 10 days. A comes within it 20
		// days from now.
		lead := int64(10 * 24 * 3600)
		if acct, err := h.API.UpdateAccount(ctx, client.AccountUpdate{ExpiringSoonLeadSeconds: &lead}); err != nil || acct.ExpiringSoonLeadSeconds != lead {
			t.Fatalf("set the lead time: %+v, %v", acct, err)
		}
		h.Settled() // a lease the clock passes would end under work in progress
		clock.Advance(20*24*time.Hour - time.Minute)
		h.Server.Expiries.Wake()
		time.Sleep(200 * time.Millisecond) // give a wrongly early event time to show
		if n := rcv.Count(); n != 2 {
			t.Fatalf("%d deliveries a minute before A's lead time; want still 2", n)
		}
		clock.Advance(time.Minute)
		h.Server.Expiries.Wake()
		heraldtest.Eventually(t, 10*time.Second, "A's expiring-soon", func() bool { return rcv.Count() >= 3 })
		h.Settled()
		clock.Advance(10 * 24 * time.Hour)
		h.Server.Expiries.Wake()
		heraldtest.Eventually(t, 10*time.Second, "A's expired", func() bool { return rcv.Count() >= 4 })
		h.Settled()
		got = expiryDeliveries(t, rcv)
		if len(got) != 4 || got[2].Event != string(event.LicenseExpiringSoon) || got[3].Event != string(event.LicenseExpired) ||
			got[2].LicenseID != a.ID || got[3].LicenseID != a.ID || !got[3].ExpiresAt.Equal(aExp) {
			t.Fatalf("got %+v; want A's expiring-soon, then its expired at %v", got[2:], aExp)
		}
	})
}

// On PostgreSQL a license planned by another process wakes this one's
// runner, asleep until a later instant: its expiry 2 s away fires then,
// not at the runner's next periodic look (an hour away here). The other
// process is a store handle with no runner of its own, so only this
// herald can fire it.
func TestRunnerWakesForAnInstantAnotherProcessPlanned(t *testing.T) {
	t.Parallel()
	heraldtest.SkipUnless(t, heraldtest.Env(heraldtest.PostgresEnv) != "", heraldtest.PostgresEnv+" is not set, so PostgreSQL is untested")
	heraldtest.PostgresHandles(t, 2)
	url := heraldtest.PostgresURL(t)
	key := make([]byte, 32)
	rand.Read(key)
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: url, Key: key, ExpiryCheck: time.Hour})
	ctx := context.Background()
	rcv, _ := watch(t, h, string(event.LicenseExpired))
	p, err := h.API.CreateProduct(ctx, "P", nil)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := h.API.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The runner's next instant: an hour away.
	later := time.Now().Add(time.Hour)
	if _, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, ExpiresAt: &later}); err != nil {
		t.Fatal(err)
	}
	other, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	soon := time.Now().Add(2 * time.Second).UTC().Truncate(time.Millisecond)
	at := soon.Format(event.TimeFormat)
	l, err := licensing.New(other).CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
		ExpiresAt: licensing.Optional[string]{Set: true, Value: &at}})
	if err != nil {
		t.Fatal(err)
	}
	heraldtest.Eventually(t, 60*time.Second, "the license planned elsewhere to expire", func() bool { return rcv.Count() >= 1 })
	got := expiryDeliveries(t, rcv)
	if len(got) != 1 || got[0].LicenseID != l.ID || !got[0].ExpiresAt.Equal(soon) || got[0].TriggeredAt.Before(soon) {
		t.Fatalf("got %+v; want license %s's expired, at %v or after", got, l.ID, soon)
	}
}

// The lead time is refused outside 1 hour to 90 days with a 422 naming
// the field, and nothing changes.
func TestExpiringSoonLeadIsValidated(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	for _, bad := range []int64{0, 3599, 7776001, -1} {
		_, err := h.API.UpdateAccount(ctx, client.AccountUpdate{ExpiringSoonLeadSeconds: &bad, Name: ptr("Renamed")})
		var pe *client.Error
		if !errors.As(err, &pe) || pe.Status != 422 || len(pe.Errors) != 1 || pe.Errors[0].Field != "expiringSoonLeadSeconds" {
			t.Errorf("lead %d: %v; want a 422 naming expiringSoonLeadSeconds alone", bad, err)
		}
	}
	acct, err := h.API.Account(ctx)
	if err != nil || acct.ExpiringSoonLeadSeconds != 604800 || acct.Name == "Renamed" {
		t.Errorf("account %+v, %v; want it unchanged, with the default lead of 604800", acct, err)
	}
	for _, ok := range []int64{3600, 7776000} {
		if acct, err := h.API.UpdateAccount(ctx, client.AccountUpdate{ExpiringSoonLeadSeconds: &ok}); err != nil || acct.ExpiringSoonLeadSeconds != ok {
			t.Errorf("lead %d: %+v, %v; want it set", ok, acct, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A herald stopped while 500 licenses expire fires each license.expired
// once when it starts again, oldest first, each with the instant it
// expired and the time it was fired.
func TestStoppedHeraldFiresWhatCameDueOnceAtStart(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "starts a herald twice on one database")
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		const n = 500
		clock := heraldtest.NewClock()
		o := heraldtest.Options{DatabaseURL: dbURL, Now: clock.Now, Key: make([]byte, 32)}
		rand.Read(o.Key)
		h := heraldtest.Start(t, o)
		o.Token = h.Token
		ctx := context.Background()
		rcv, _ := watch(t, h, string(event.LicenseExpired))
		p, err := h.API.CreateProduct(ctx, "P", nil)
		if err != nil {
			t.Fatal(err)
		}
		// Expiring an hour from now, a millisecond apart, created in an
		// order other than their expiry's.
		base := clock.Now().Add(time.Hour).Truncate(time.Millisecond)
		createConcurrently(t, n, func(i int) error {
			exp := base.Add(time.Duration((i*7)%n) * time.Millisecond)
			_, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, ExpiresAt: &exp})
			return err
		})
		// Their license.expiring-soon (due at once, inside the lead time)
		// fired before the stop, so what comes due meanwhile is only
		// license.expired.
		heraldtest.Eventually(t, 30*time.Second, "the reminders fired", func() bool {
			next, ok, err := h.Server.Store.NextExpiryDue(ctx)
			return err == nil && ok && next.After(clock.Now())
		})
		h.Stop()
		clock.Advance(2 * time.Hour) // all 500 expire while herald is stopped
		started := clock.Now()
		h = heraldtest.Start(t, o)
		heraldtest.Eventually(t, 60*time.Second, fmt.Sprintf("%d license.expired", n), func() bool { return rcv.Count() >= n })
		h.Settled()
		time.Sleep(200 * time.Millisecond) // give a second firing time to show
		got := expiryDeliveries(t, rcv)
		once := map[string]int{}
		for _, d := range got {
			once[d.LicenseID]++
			if d.TriggeredAt.Before(started) || !d.ExpiresAt.Before(started) {
				t.Fatalf("%+v: want fired after the start (%v), about an instant before it", d, started)
			}
		}
		if len(got) != n || len(once) != n {
			t.Fatalf("%d deliveries for %d licenses; want %d, once each", len(got), len(once), n)
		}
		// Oldest first, in the firing order (event ids are time-ordered).
		// The first batch is fired alone: it holds the oldest expiries. On
		// PostgreSQL the rest go in batches fired at once, whose events
		// interleave; on SQLite, one after another, so the whole order
		// follows expiresAt.
		byID := slices.SortedFunc(slices.Values(got), func(a, b expiryDelivery) int { return strings.Compare(a.ID, b.ID) })
		byExpiry := slices.SortedFunc(slices.Values(got), func(a, b expiryDelivery) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
		firstBatch := map[string]bool{}
		for _, d := range byExpiry[:licensing.ExpiryBatch] {
			firstBatch[d.LicenseID] = true
		}
		for i, d := range byID {
			if i < licensing.ExpiryBatch && !firstBatch[d.LicenseID] {
				t.Fatalf("fired %d: %v, not among the %d oldest expiries", i, d.ExpiresAt, licensing.ExpiryBatch)
			}
			if h.Server.Store.Engine() == "sqlite" && i > 0 && d.ExpiresAt.Before(byID[i-1].ExpiresAt) {
				t.Fatalf("fired %v before %v: want the oldest expiry first", byID[i-1].ExpiresAt, d.ExpiresAt)
			}
		}
	})
}

// Three processes on one PostgreSQL, 2,000 licenses expiring in the same
// second: 2,000 license.expired, none twice, whichever process fires each.
func TestFleetFiresEachExpiryOnce(t *testing.T) {
	t.Parallel()
	const n = 2000
	clock := heraldtest.NewClock()
	fleet := startFleet(t, 3, heraldtest.Options{Now: clock.Now})
	h := fleet[0]
	ctx := context.Background()
	rcv, _ := watch(t, h, string(event.LicenseExpired))
	p, err := h.API.CreateProduct(ctx, "P", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := clock.Now().Add(time.Hour).Truncate(time.Second)
	createConcurrently(t, n, func(i int) error {
		exp := base.Add(time.Duration(i%1000) * time.Millisecond)
		_, err := fleet[i%len(fleet)].API.CreateLicense(ctx, client.LicenseCreate{ProductID: p.ID, ExpiresAt: &exp})
		return err
	})
	clock.Advance(time.Hour + time.Second)
	for _, f := range fleet {
		f.Server.Expiries.Wake()
	}
	heraldtest.Eventually(t, 120*time.Second, fmt.Sprintf("%d license.expired", n), func() bool { return rcv.Count() >= n })
	for _, f := range fleet {
		f.Settled()
	}
	time.Sleep(500 * time.Millisecond) // give a second firing time to show
	got := expiryDeliveries(t, rcv)
	once := map[string]int{}
	events := map[string]bool{}
	for _, d := range got {
		once[d.LicenseID]++
		events[d.ID] = true
	}
	if len(got) != n || len(once) != n || len(events) != n {
		t.Fatalf("%d deliveries of %d events for %d licenses; want %d, once each", len(got), len(events), len(once), n)
	}
}

// createConcurrently runs create(i) for i in [0, n) on 8 workers.
func createConcurrently(t *testing.T, n int, create func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := create(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
}
