package listen

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/heraldhq/herald/client"
)

// PullConfig configures [Pull].
type PullConfig struct {
	// Client reads the webhook's events: made with a pull token for it, or
	// with an API token. Its http.Client must allow longer than Wait.
	// Required.
	Client *client.Client
	// Webhook is the pull webhook's id. Required.
	Webhook string
	// Forward is the absolute http or https URL each event is POSTed to,
	// with its body and signature headers as herald would POST it.
	// Required.
	Forward string
	// Out receives a line per event. Default os.Stdout.
	Out io.Writer
	// HTTP makes the forwards. Default as Config.Client's.
	HTTP *http.Client
	// Wait is how long each read waits for an event. Default 30 s.
	Wait time.Duration
	// Limit is how many events a read takes at most. Default 100.
	Limit int
}

// PullRetry bounds the pause after a read or a forward failed: it doubles
// from a second up to it, and a success ends it.
const PullRetry = 30 * time.Second

// Pull consumes a pull webhook until ctx ends: it reads its events in
// order, POSTs each to cfg.Forward, and acknowledges them up to the last
// one the app answered 2xx. An event the app refuses, or cannot be reached
// for, is read again after a pause, with every event after it, so the app
// sees the events in order and each at least once.
func Pull(ctx context.Context, cfg PullConfig) error {
	if cfg.Client == nil || cfg.Webhook == "" {
		return errors.New("listen: a client and a pull webhook's id are required")
	}
	if u, err := url.Parse(cfg.Forward); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("listen: forward URL %q is not an absolute http or https URL", cfg.Forward)
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = Config{}.withDefaults().Client
	}
	cfg.Wait = cmp.Or(cfg.Wait, 30*time.Second)
	cfg.Limit = cmp.Or(cfg.Limit, 100)
	fmt.Fprintf(cfg.Out, "reading webhook %s's events from %s, forwarding them to %s\n\n", cfg.Webhook, cfg.Client.BaseURL(), cfg.Forward)
	after, pause := "", time.Duration(0)
	for ctx.Err() == nil {
		if pause > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
		}
		next, err := pullOnce(ctx, cfg, after)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var e *client.Error
			if errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusNotFound || e.Status == http.StatusConflict) {
				return fmt.Errorf("listen: %w", err) // waiting will not mend it
			}
			pause = min(max(2*pause, time.Second), PullRetry)
			fmt.Fprintf(cfg.Out, "%s  %v; trying again in %s\n\n", time.Now().Format("15:04:05.000"), err, pause)
			continue
		}
		after, pause = next, 0
	}
	return nil
}

// pullOnce reads once after after, forwards what came in order, and
// acknowledges up to the last event forwarded. It returns the cursor to
// read after next: the last acknowledged (an event not forwarded comes
// again).
func pullOnce(ctx context.Context, cfg PullConfig, after string) (string, error) {
	got, err := cfg.Client.ReadEvents(ctx, cfg.Webhook, client.ReadOptions{After: after, Limit: cfg.Limit, Wait: cfg.Wait})
	if err != nil {
		return after, fmt.Errorf("read events: %w", err)
	}
	done := ""
	var failed error
	for _, e := range got.Data {
		line, err := forwardEvent(ctx, cfg, e)
		fmt.Fprintf(cfg.Out, "%s  %s  %s  %s\n\n", time.Now().Format("15:04:05.000"), e.Event, e.ID, line)
		if err != nil {
			failed = err
			break
		}
		done = e.Cursor
	}
	if done != "" {
		if _, err := cfg.Client.AckEvents(ctx, cfg.Webhook, done); err != nil {
			return after, fmt.Errorf("acknowledge events: %w", err)
		}
		after = done
	}
	if failed != nil {
		return after, failed
	}
	if len(got.Data) == 0 {
		return got.Cursor, nil
	}
	return after, nil
}

// forwardEvent POSTs one event to cfg.Forward as herald would have, and
// returns the line to print about it, and an error unless the app
// answered 2xx.
func forwardEvent(ctx context.Context, cfg PullConfig, e client.PullEvent) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Forward, bytes.NewReader([]byte(e.Body)))
	if err != nil {
		return "", err
	}
	req.Header = http.Header{"User-Agent": {""}}
	for name, value := range e.Headers {
		req.Header[name] = []string{value} // as herald spells them, as a POST carries them
	}
	req.Header["Content-Length"] = []string{strconv.Itoa(len(e.Body))}
	resp, err := cfg.HTTP.Do(req)
	if err != nil {
		if urlErr := new(url.Error); errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return fmt.Sprintf("forward to %s failed: %v; not acknowledged", cfg.Forward, err), fmt.Errorf("forward to %s: %w", cfg.Forward, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("forwarded to %s: %s; not acknowledged", cfg.Forward, resp.Status), fmt.Errorf("forward to %s: answered %s", cfg.Forward, resp.Status)
	}
	return fmt.Sprintf("forwarded to %s: %s", cfg.Forward, resp.Status), nil
}
