package e2e_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/webhook"
)

// A full disk under SQLite: with the database on a small filesystem that
// fills up, every change answers 503 with Retry-After and changes nothing,
// one clear line says so in the log, and attempts already made keep their
// outcomes; once space is freed, herald goes on without a restart: the
// events committed before the disk filled are each delivered and recorded
// once, new changes are accepted, and the database is whole.
func TestFullDiskOnSQLite(t *testing.T) {
	t.Parallel()
	dir := heraldtest.SmallFS(t, 8<<20)
	path := filepath.Join(dir, "herald.db")
	logs := new(heraldtest.Output)
	// The disk stays full for longer than a lease: outcomes refused
	// meanwhile must still be recorded, not dropped and their deliveries
	// made again. The lease ends by moving herald's clock past it, not by
	// waiting. The receiver holds the first attempts while the disk is
	// filled and the refusals checked, which on a loaded machine takes
	// seconds to tens of seconds; the attempt time-out (real time) is far
	// longer than that, for an attempt that timed out is rightly made again
	// (at least once) and the test would count a duplicate herald did not
	// make in error.
	clock := heraldtest.NewClock()
	const attemptTimeout, lease = 5 * time.Minute, 6 * time.Minute
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: "sqlite:" + path, Logs: logs, Now: clock.Now,
		Delivery: delivery.Config{AttemptTimeout: attemptTimeout, Lease: lease}})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	held := rcv.Hold(t)
	hook := h.CreateWebhook("full", rcv.URL, "license.created")
	product, err := h.API.CreateProduct(ctx, "Pro", nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	for range n {
		if _, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: product.ID}); err != nil {
			t.Fatal(err)
		}
	}
	committed := h.Logs("")
	if len(committed) != n {
		t.Fatalf("%d logs committed; want %d", len(committed), n)
	}
	held.Wait(t, 30*time.Second, "the first attempts")
	owner := signIn(t, h)
	// As if the owner's last request were two minutes old: the next one
	// moves the session's expiry, a write.
	if err := h.Server.Store.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE portal_sessions SET seen_at = ?`, store.MS(time.Now().Add(-2*time.Minute)))
		return err
	}); err != nil {
		t.Fatal(err)
	}

	// The WAL is emptied first, so that the next write needs new space
	// rather than reusing the WAL's old pages. A write that lands between
	// the checkpoint and the filling (a lease renewed, a recovery looked
	// for: more likely the slower the machine) leaves frames that the next
	// checkpoint copies back, after which SQLite writes the WAL from its
	// start again, in space it already has: renewals would go on on a full
	// disk and the leases never end. So the disk counts as full only with
	// the WAL still empty once it is; otherwise it is freed and filled again,
	// and what the log says is read from the last filling on.
	var free func()
	var fullFrom int // the log's length when the disk was last filled
	heraldtest.Eventually(t, 10*time.Second, "a full disk with an empty WAL", func() bool {
		if free != nil {
			free()
		}
		var busy, walPages, done int
		err := h.Server.Store.QueryRow(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &walPages, &done)
		if err != nil || busy != 0 || walPages != 0 {
			free = nil
			return false
		}
		fullFrom = len(logs.String())
		free = heraldtest.Fill(t, dir)
		wal, err := os.Stat(path + "-wal")
		return err == nil && wal.Size() == 0
	})
	full := time.Now()

	for _, change := range []struct {
		what string
		do   func() error
	}{
		{"create a license", func() error {
			_, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: product.ID})
			return err
		}},
		{"rename a product", func() error { _, err := h.API.UpdateProduct(ctx, product.ID, "Renamed"); return err }},
		{"create a webhook", func() error {
			_, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "second", URL: rcv.URL, Events: []string{"license.created"}})
			return err
		}},
		{"create a license with an Idempotency-Key", func() error {
			_, err := h.API.CreateLicense(client.WithIdempotencyKey(ctx, "full-disk-1"), client.LicenseCreate{ProductID: product.ID})
			return err
		}},
	} {
		var e *client.Error
		switch err := change.do(); {
		case !errors.As(err, &e):
			t.Errorf("%s on a full disk: %v; want a 503 problem", change.what, err)
		case e.Status != http.StatusServiceUnavailable || e.RetryAfter != 30*time.Second ||
			!strings.Contains(e.Detail, "disk is full") || !strings.Contains(e.Detail, "not made"):
			t.Errorf("%s on a full disk: %d, Retry-After %v, %q; want 503, Retry-After 30s, saying the disk is full and the change was not made",
				change.what, e.Status, e.RetryAfter, e.Detail)
		}
	}
	checkPortalOnFullDisk(t, h, owner)

	// Reads still work, and show that nothing changed.
	if logs := h.Logs(""); len(logs) != n {
		t.Errorf("%d logs after the refused changes; want %d", len(logs), n)
	}
	if p, err := h.API.ListWebhooks(ctx, client.WebhookFilter{}); err != nil || len(p.Data) != 1 {
		t.Errorf("webhooks after the refused changes: %v, %v; want the one", p.Data, err)
	}
	var got struct{ Name string }
	h.Must(http.StatusOK, "GET", "/v3/products/"+product.ID, nil, &got)
	if got.Name != "Pro" {
		t.Errorf("product named %q after a refused rename; want Pro", got.Name)
	}

	// The attempts in flight end now; their outcomes cannot be written.
	// The disk stays full until the leases they were claimed under have
	// run out, as renewing them is a write too: herald's clock moves past
	// them, once the attempts have ended and their outcomes wait to be
	// recorded, so that recording them goes on past a lease. No claim can
	// take their logs meanwhile (a claim is a write), nor once space is
	// back: the dispatcher renews the leases it holds before its next claim,
	// having seen a write refused or its last renewal a lease old.
	held.Release()
	heraldtest.Eventually(t, time.Minute, "the held attempts ended", func() bool {
		return attemptsMade(t, h) >= float64(rcv.Count())
	})
	clock.Advance(lease)
	heraldtest.Eventually(t, time.Minute, "the leases of the attempts made to run out", func() bool {
		var pending, live int
		err := h.Server.Store.QueryRow(ctx, `SELECT COUNT(*), COUNT(CASE WHEN lease_until > ? THEN 1 END) FROM delivery_queue WHERE lease IS NOT NULL`,
			store.MS(clock.Now())).Scan(&pending, &live)
		return err == nil && pending > 0 && live == 0
	})
	fullFor := time.Since(full)
	whileFull := logs.String()[fullFrom:]
	if c := strings.Count(whileFull, `msg="database disk is full`); c < 1 || c > 1+int(fullFor/store.FullLogEvery) {
		t.Errorf("%d lines saying the disk is full in %v; want one per %v:\n%s", c, fullFor.Round(time.Second), store.FullLogEvery, logs)
	}
	if !regexp.MustCompile(`level=ERROR msg="database disk is full[^"]*" database=` + regexp.QuoteMeta(path) + ` `).MatchString(whileFull) {
		t.Errorf("no error line naming the database; the log:\n%s", logs)
	}

	free()
	heraldtest.Eventually(t, time.Minute, "every committed event delivered and recorded", func() bool {
		for _, l := range h.Logs("") {
			if l.Status != "succeeded" {
				return false
			}
		}
		return true
	})
	if _, err := h.API.CreateLicense(ctx, client.LicenseCreate{ProductID: product.ID}); err != nil {
		t.Fatalf("a change once space is back, without a restart: %v", err)
	}
	heraldtest.Eventually(t, time.Minute, "the new event delivered", func() bool { return len(h.Logs("status=succeeded")) == n+1 })

	times := map[string]int{}
	for _, r := range rcv.Requests() {
		if err := webhook.Verify(hook.Token, r.Body, r.Header.Get("webhook-signature")); err != nil {
			t.Fatalf("a delivery failed verification: %v", err)
		}
		times[r.Header.Get("webhook-id")]++
	}
	once := true
	for _, l := range committed {
		got := h.Log(l.ID)
		if times[l.EventID] != 1 || got.Status != "succeeded" || len(got.Attempts) != 1 {
			t.Errorf("event %s: delivered %d times, log %s with %d attempts; want once, succeeded, one attempt",
				l.EventID, times[l.EventID], got.Status, len(got.Attempts))
			once = false
		}
	}
	if !once {
		t.Logf("herald's log:\n%s", logs)
	}
	if !strings.Contains(logs.String()[fullFrom:], `msg="database disk has space again`) {
		t.Errorf("no line saying space is back; the log:\n%s", logs)
	}
	var check string
	if err := h.Server.Store.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v; want ok", check, err)
	}
}

// attemptsMade is how many delivery attempts h has made and seen end, from
// its /metrics.
func attemptsMade(t *testing.T, h *heraldtest.Herald) float64 {
	t.Helper()
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "herald_delivery_attempts_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += v
	}
	return n
}

var signInCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// portalClient is a browser without JavaScript: it keeps cookies and does
// not follow redirects.
func portalClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// postSignIn reads the sign-in page and posts its form with the owner's
// credentials.
func postSignIn(t *testing.T, h *heraldtest.Herald, c *http.Client) (*http.Response, string) {
	t.Helper()
	_, page := getPage(t, c, h.URL+"/signin")
	m := signInCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("sign-in page without a CSRF field:\n%s", page)
	}
	resp, err := c.PostForm(h.URL+"/signin", url.Values{"csrf": {m[1]}, "email": {h.Email}, "password": {h.Password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func getPage(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// signIn returns a portal client signed in as h's owner.
func signIn(t *testing.T, h *heraldtest.Herald) *http.Client {
	t.Helper()
	c := portalClient()
	if resp, page := postSignIn(t, h, c); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", resp.StatusCode, page)
	}
	return c
}

// checkPortalOnFullDisk reads a page as the signed-in owner, whose session
// cannot be touched on a full disk, and signs in afresh, which must write
// a session: the page is shown, and the sign-in answered with a 503 page
// that says why.
func checkPortalOnFullDisk(t *testing.T, h *heraldtest.Herald, owner *http.Client) {
	t.Helper()
	if resp, page := getPage(t, owner, h.URL+"/webhooks"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "full") {
		t.Errorf("the webhooks page on a full disk: %d; want 200 with the webhook:\n%s", resp.StatusCode, page)
	}
	resp, page := postSignIn(t, h, portalClient())
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "30" || !strings.Contains(page, "disk is full") {
		t.Errorf("portal sign-in on a full disk: %d, Retry-After %q; want 503, Retry-After 30 and a page saying the disk is full:\n%s",
			resp.StatusCode, resp.Header.Get("Retry-After"), page)
	}
}
