// Package retention keeps event logs from growing without bound: it removes
// logs that completed (succeeded, failed or cancelled) longer ago than the
// configured retention, with their attempts, and then the events no log
// refers to any more. It never removes a queued, pending or retrying log, and
// it deletes in small batches, each its own short transaction with a pause
// after it, so that delivery and the API never wait long behind it. On
// PostgreSQL, where the history is partitioned by day, it first drops the
// partitions of each whole day past the retention that no waiting log holds
// (store.DropDays), which deletes no row one by one. It also
// removes API idempotency keys older than their 24 hours, and erases the old
// webhook tokens of rotations whose overlap has ended.
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Config tunes a Run. Zero fields take the defaults shown.
type Config struct {
	Keep     time.Duration // required: completed logs older than this go
	Interval time.Duration // 1m: how often to look for logs to remove
	Batch    int           // 1000: rows per transaction
	Pause    time.Duration // 20ms: between batches
	Logger   *slog.Logger
	// Removed, when set, is told what each pass removed (for metrics).
	Removed func(logs, events int)
}

func (c Config) withDefaults() Config {
	c.Interval = cmp.Or(c.Interval, time.Minute)
	c.Batch = cmp.Or(c.Batch, 1000)
	c.Pause = cmp.Or(c.Pause, 20*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Run removes expired logs and events (unless cfg.Keep is 0, which keeps
// them forever), idempotency keys past store.IdempotencyTTL and the old
// tokens of ended rotations every
// cfg.Interval until ctx is done. Several processes may run it on one
// database at once: on PostgreSQL they split the work.
func Run(ctx context.Context, st *store.Store, cfg Config) {
	cfg = cfg.withDefaults()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		if cfg.Keep > 0 {
			logs, events, err := Purge(ctx, st, cfg)
			switch {
			case err != nil && ctx.Err() == nil:
				cfg.Logger.Warn("retention: will try again", "err", err)
			case logs > 0 || events > 0:
				cfg.Logger.Info("retention: removed expired event logs", "logs", logs, "events", events)
			}
			if cfg.Removed != nil && (logs > 0 || events > 0) {
				cfg.Removed(logs, events)
			}
		}
		if _, err := PurgeIdempotencyKeys(ctx, st, cfg); err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("retention: will try again", "err", err)
		}
		// Signing switched at each rotation's end already; this erases the
		// old tokens within an interval of it.
		if n, err := st.EndTokenRotations(ctx); err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("retention: will try again", "err", err)
		} else if n > 0 {
			cfg.Logger.Info("retention: ended webhook token rotations, old tokens erased", "webhooks", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Purge removes, batch by batch, every log that completed before now minus
// cfg.Keep, then the events left without logs, and reports how many of each.
func Purge(ctx context.Context, st *store.Store, cfg Config) (logs, events int, err error) {
	cfg = cfg.withDefaults()
	if cfg.Keep <= 0 {
		return 0, 0, fmt.Errorf("retention: Keep must be positive")
	}
	before := st.Now().Add(-cfg.Keep)
	// On PostgreSQL whole days go first, each by dropping its partitions;
	// what they could not take (a day that still holds a waiting log, the
	// default partition, and SQLite's tables) goes row by row below.
	days, err := st.DropDays(ctx, before)
	for _, d := range days {
		logs += d.Logs
		events += d.Events
		cfg.Logger.Debug("retention: dropped a day of history", "day", d.Day.Format(time.DateOnly), "logs", d.Logs, "events", d.Events)
	}
	if err != nil {
		return logs, events, err
	}
	for {
		n, err := st.PurgeLogs(ctx, before, cfg.Batch)
		logs += n
		if err != nil {
			return logs, events, err
		}
		if n < cfg.Batch {
			break
		}
		if !pause(ctx, cfg.Pause) {
			return logs, events, ctx.Err()
		}
	}
	var cursor store.EventCursor
	for {
		n, next, done, err := st.PurgeEvents(ctx, before, cursor, cfg.Batch)
		events += n
		if err != nil || done {
			return logs, events, err
		}
		cursor = next
		if !pause(ctx, cfg.Pause) {
			return logs, events, ctx.Err()
		}
	}
}

// PurgeIdempotencyKeys removes, batch by batch, the idempotency keys older
// than store.IdempotencyTTL, which answer nothing any more (a claim of such
// a key replaces it, so their removal only bounds the table), and reports
// how many went.
func PurgeIdempotencyKeys(ctx context.Context, st *store.Store, cfg Config) (int, error) {
	cfg = cfg.withDefaults()
	before := st.Now().Add(-store.IdempotencyTTL)
	total := 0
	for {
		n, err := st.PurgeIdempotencyKeys(ctx, before, cfg.Batch)
		total += n
		if err != nil || n < cfg.Batch {
			return total, err
		}
		if !pause(ctx, cfg.Pause) {
			return total, ctx.Err()
		}
	}
}

func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// MaxKeep is the longest retention ParseDuration accepts, 106751 days
// (about 292 years): the most whole days a time.Duration holds. Anything
// longer would wrap around to a short or negative duration.
const MaxKeep = 106751 * 24 * time.Hour

// ParseDuration reads a retention such as "30d", "12h", "1d12h" or "90m":
// Go's durations plus a leading whole number of days. "0" means keep
// forever. A retention longer than MaxKeep is refused rather than wrapped.
func ParseDuration(text string) (time.Duration, error) {
	bad := fmt.Errorf("%q: want a duration such as 30d, 12h or 1d12h, at most %dd; 0 keeps logs forever", text, MaxKeep/(24*time.Hour))
	tooLong := fmt.Errorf("%q is longer than the longest retention, %dd (about 292 years); 0 keeps logs forever", text, MaxKeep/(24*time.Hour))
	s := strings.TrimSpace(text)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) && n > 0:
			return 0, tooLong
		case err != nil || n < 0:
			return 0, bad
		case n > int64(MaxKeep/(24*time.Hour)):
			return 0, tooLong
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	// time.ParseDuration refuses a duration that overflows as invalid, so
	// such a text gets bad, which names the limit too.
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || d < 0:
		return 0, bad
	case d > MaxKeep-days: // days ≤ MaxKeep, so this cannot wrap
		return 0, tooLong
	}
	return days + d, nil
}

// FormatDuration shows a retention as ParseDuration reads it: "30d", "12h0m0s",
// or "forever" for 0.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "forever"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
