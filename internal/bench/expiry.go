package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
)

// Scenario x: Options.Expiries licenses (100,000 by default) expire evenly
// across 10 seconds, and one webhook subscribes to license.expired. The
// figures are from each license's expiresAt to the verified receipt of its
// license.expired (and, in the note, to the event's triggeredAt: the firing
// alone), the deliveries per second from the first instant to the last
// receipt, and lost and duplicated licenses.
//
// The licenses are made before herald starts, through licensing as the API
// makes them, by a store this process opens: expiring a month out, their
// license.expiring-soon fired (through licensing, as herald fires it), then
// moved with the record of that reminder by one UPDATE to their instants,
// starting a margin after the setup ends (expiryMargin): the state of licenses whose
// reminders went out a week before. So the run measures the expiries alone,
// not a burst of reminders nor the API.
const expirySpread = 10 * time.Second

// expiryMargin is from the setup's end to the first instant: the move of
// every expiry and herald's start come in it, and both grow with the
// licenses (on a loaded 2-core machine 100,000 took over 30 s).
func expiryMargin(n int) time.Duration {
	return 20*time.Second + time.Duration(n)*500*time.Microsecond
}

func expiries(ctx context.Context, o Options, rcv *receiver) ([]Result, error) {
	n := max(1, o.Expiries)
	var first time.Time
	token := "whsec_bench_expiry_" + randomHex(16)
	url := rcv.add(0, token, false)
	rcv.expiryMode()
	prepare := func(ctx context.Context, dbURL, keyFile, apiToken string) error {
		var err error
		first, err = prepareExpiries(ctx, o, dbURL, keyFile, apiToken, url, token, n)
		return err
	}
	fmt.Fprintf(o.Log, "bench: x: making %d licenses that expire across %s\n", n, expirySpread)
	var env []string
	if o.ProfileDir != "" {
		env = append(env, "HERALD_CPU_PROFILE="+filepath.Join(o.ProfileDir, "herald-x.pprof"))
	}
	c, err := startChildWith(ctx, o.Binary, o.Database, prepare, env...)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if wait := time.Until(first); wait < time.Second {
		return nil, fmt.Errorf("herald was ready only %s before the first expiry; the setup overran its margin", wait)
	}
	fmt.Fprintf(o.Log, "bench: x: herald is up; the first license expires in %s\n", time.Until(first).Round(time.Second))
	s := &session{c: c, rcv: rcv, hooks: 1, accepted: n}
	cpu0, _ := c.usage()
	s.cpu0 = cpu0
	s.machine0 = readCPUTimes()
	// Wait out the spread, then drain.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(first.Add(expirySpread))):
	}
	s.drain(ctx, 15*time.Second, 5*time.Minute)
	r := s.result("x", fmt.Sprintf("%d licenses expiring across %s, license.expired to one webhook", n, expirySpread), expirySpread, first, 0)
	r.Events = n
	r.EventsPerSec = float64(n) / expirySpread.Seconds()
	r.APIP99MS = 0 // no API calls are measured here
	lags := sortedCopy(rcv.firingLags(first, first.Add(expirySpread)))
	// The firing's p99 in each fifth of the spread tells a firing that
	// falls further behind as the instants come (it fires fewer a second
	// than fall due) from one held up once.
	var slices []string
	for i := range 5 {
		from := first.Add(time.Duration(i) * expirySpread / 5)
		in := sortedCopy(rcv.firingLags(from, from.Add(expirySpread/5)))
		slices = append(slices, fmt.Sprintf("%.0f", percentile(in, 0.99)))
	}
	r.Note = fmt.Sprintf("latency is expiresAt to receipt; expiresAt to triggeredAt (the firing alone) p50 %.1f ms, p99 %.1f ms; "+
		"firing p99 by fifth of the spread %s ms", percentile(lags, 0.50), percentile(lags, 0.99), strings.Join(slices, " / "))
	return []Result{r}, nil
}

// prepareExpiries makes the store's account (its API token apiToken), a
// product, the webhook (to url, signing with token, subscribed to
// license.expired) and n licenses, as the comment on the scenario says, and
// returns the first expiry instant.
func prepareExpiries(ctx context.Context, o Options, dbURL, keyFile, apiToken, url, token string, n int) (time.Time, error) {
	key, _, err := secret.LoadOrCreateKeyFile(keyFile)
	if err != nil {
		return time.Time{}, err
	}
	st, err := store.Open(ctx, dbURL, store.Options{Key: key})
	if err != nil {
		return time.Time{}, err
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "bench", OwnerEmail: "bench@example.com",
		PasswordHash: "x", TokenHash: auth.HashToken(apiToken)})
	if err != nil {
		return time.Time{}, fmt.Errorf("create account: %w", err)
	}
	if _, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "bench expiry", URL: url,
		Events: []event.Kind{event.LicenseExpired}, Enabled: true, Token: token}); err != nil {
		return time.Time{}, fmt.Errorf("create webhook: %w", err)
	}
	lic := licensing.New(st)
	name := "bench"
	p, err := lic.CreateProduct(ctx, acct.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: &name}})
	if err != nil {
		return time.Time{}, fmt.Errorf("create product: %w", err)
	}
	// A month out, i/n of the spread apart.
	far := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, max(1, o.Clients))
	for range max(1, o.Clients) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				at := far.Add(time.Duration(i) * expirySpread / time.Duration(n)).UTC().Format(event.TimeFormat)
				if _, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
					ExpiresAt: licensing.Optional[string]{Set: true, Value: &at}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return time.Time{}, fmt.Errorf("create licenses: %w", err)
	}
	// The reminders first, for the instants a month out: a lead time of
	// 90 days puts every license inside it (the change re-plans them), and
	// licensing fires them as herald would. Then the lead time goes back.
	for _, lead := range []int64{store.MaxExpiringSoonLead, store.DefaultExpiringSoonLead} {
		if _, err := st.UpdateAccount(ctx, acct.ID, store.AccountPatch{ExpiringSoonLead: &lead}); err != nil {
			return time.Time{}, err
		}
		for lead == store.MaxExpiringSoonLead {
			k, err := lic.FireDueExpiries(ctx, licensing.ExpiryBatch)
			if err != nil {
				return time.Time{}, fmt.Errorf("fire the reminders: %w", err)
			}
			if k == 0 {
				break
			}
		}
	}
	// Then every instant, with the record of its reminder and its plan,
	// moved to the spread that starts a margin from now.
	first := time.Now().Add(expiryMargin(n)).Truncate(time.Second)
	shift := store.MS(far) - store.MS(first)
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE licenses SET expires_at = expires_at - ? WHERE account_id = ?`, shift, acct.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE license_expiries SET expires_at = expires_at - ?, soon_fired_for = soon_fired_for - ?,
due_at = due_at - ? WHERE account_id = ?`, shift, shift, shift, acct.ID)
		return err
	}); err != nil {
		return time.Time{}, fmt.Errorf("move the licenses' expiry: %w", err)
	}
	if next, ok, err := st.NextExpiryDue(ctx); err != nil || !ok || next.Before(first) {
		return time.Time{}, fmt.Errorf("after the setup the next expiry is due at %v (%v, %v); want %v", next, ok, err, first)
	}
	return first, nil
}
