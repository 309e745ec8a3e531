package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/heraldhq/herald/client"
)

// retryFlags are a webhook's retry policy as flags of webhooks create and
// update; a flag not given leaves its field to the default.
type retryFlags struct {
	fs                *flag.FlagSet
	attempts          *int
	backoff           *string
	interval, maxWait *time.Duration
	defaultPolicy     *bool // update only: back to the default
	command           string
}

func addRetryFlags(fs *flag.FlagSet, command string, update bool) *retryFlags {
	r := &retryFlags{fs: fs, command: command}
	r.attempts = fs.Int("max-attempts", 0, "attempts per event for this webhook, the first included: 1 to 30 (default: herald's, 5)")
	r.backoff = fs.String("backoff", "", "the wait between attempts: fixed (the default) or exponential (doubling, with jitter)")
	r.interval = fs.Duration("retry-interval", 0, "the wait after a failed attempt, in whole seconds, e.g. 30s or 5m (default 5m); with exponential back-off the first wait")
	r.maxWait = fs.Duration("max-retry-interval", 0, "with exponential back-off, the longest wait, in whole seconds (default 1h); at most 24h")
	if update {
		r.defaultPolicy = fs.Bool("default-retry", false, "go back to herald's default retry policy")
	}
	return r
}

// policy is the retry policy the flags given say, nil when none was
// given; a pointer to client.RetryPolicy{} for --default-retry.
func (r *retryFlags) policy() (*client.RetryPolicy, error) {
	set := map[string]bool{}
	r.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	given := set["max-attempts"] || set["backoff"] || set["retry-interval"] || set["max-retry-interval"]
	if r.defaultPolicy != nil && *r.defaultPolicy {
		if given {
			return nil, usageError{r.command, fmt.Errorf("--default-retry goes back to the default policy: pass it without --max-attempts, --backoff, --retry-interval or --max-retry-interval")}
		}
		return &client.RetryPolicy{}, nil
	}
	if !given {
		return nil, nil
	}
	p := client.RetryPolicy{Backoff: *r.backoff}
	if set["max-attempts"] {
		if *r.attempts < 1 || *r.attempts > 30 {
			return nil, usageError{r.command, fmt.Errorf("--max-attempts %d: want 1 to 30 attempts, the first included", *r.attempts)}
		}
		p.MaxAttempts = *r.attempts
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		to   *int
	}{{"retry-interval", r.interval, &p.IntervalSeconds}, {"max-retry-interval", r.maxWait, &p.MaxIntervalSeconds}} {
		if !set[d.name] {
			continue
		}
		if *d.v < time.Second || *d.v%time.Second != 0 {
			return nil, usageError{r.command, fmt.Errorf("--%s %s: want a whole number of seconds, at least 1s (e.g. 30s, 5m)", d.name, *d.v)}
		}
		*d.to = int(*d.v / time.Second)
	}
	return &p, nil
}
