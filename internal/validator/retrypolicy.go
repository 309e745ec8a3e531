package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/heraldhq/herald/internal/store"
)

// The bounds of a webhook's retry policy (decision 0123).
const (
	MaxRetryAttempts    = 30
	MaxRetryInterval    = 86400  // seconds: a day between two attempts
	MaxRetrySpan        = 259200 // seconds: 3 days from the first attempt to the last
	DefaultRetryCap     = 3600   // an exponential policy's cap when none is given
	defaultRetryAttempt = 5
	defaultRetryWait    = 300
)

// DefaultRetryPolicy is the specification's: 5 attempts 5 minutes apart.
var DefaultRetryPolicy = store.RetryPolicy{MaxAttempts: defaultRetryAttempt, Backoff: store.BackoffFixed,
	IntervalSeconds: defaultRetryWait, MaxIntervalSeconds: defaultRetryWait}

// RetrySpan is the longest time, in seconds, a policy lets pass between a
// delivery's first attempt and its last: every wait at its full length
// (jitter only shortens them).
func RetrySpan(p store.RetryPolicy) int64 {
	var total int64
	wait := int64(p.IntervalSeconds)
	for range max(p.MaxAttempts-1, 0) {
		if p.Backoff != store.BackoffExponential {
			total += int64(p.IntervalSeconds)
			continue
		}
		total += min(wait, int64(p.MaxIntervalSeconds))
		wait = min(wait*2, int64(MaxRetryInterval)*2)
	}
	return total
}

// RetryPolicyFields is what a retry policy is sent as, each field nil when
// not given.
type RetryPolicyFields struct {
	MaxAttempts, IntervalSeconds, MaxIntervalSeconds *int
	Backoff                                          *string
}

// ReadRetryPolicy reads a retry policy sent as JSON under field
// ("retryPolicy"): an object of maxAttempts, backoff, intervalSeconds and
// maxIntervalSeconds, each a whole number but backoff; a wrong type or an
// unknown member is an error naming it (retryPolicy.maxAttempts). The
// fields read are then checked by CheckRetryPolicy.
func ReadRetryPolicy(v *Errors, field string, raw json.RawMessage) *store.RetryPolicy {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		v.Add(field, "must be an object of maxAttempts, backoff, intervalSeconds and maxIntervalSeconds, or null for the default")
		return nil
	}
	var f RetryPolicyFields
	before := len(*v)
	whole := func(name string) *int {
		m, ok := members[name]
		if !ok || string(m) == "null" {
			return nil
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(m)))
		if err != nil {
			v.Add(field+"."+name, "must be a whole number")
			return nil
		}
		return &n
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch name {
		case "maxAttempts":
			f.MaxAttempts = whole(name)
		case "intervalSeconds":
			f.IntervalSeconds = whole(name)
		case "maxIntervalSeconds":
			f.MaxIntervalSeconds = whole(name)
		case "backoff":
			if string(members[name]) == "null" {
				continue
			}
			var s string
			if err := json.Unmarshal(members[name], &s); err != nil {
				v.Add(field+".backoff", fmt.Sprintf("must be %q or %q", store.BackoffFixed, store.BackoffExponential))
				continue
			}
			f.Backoff = &s
		default:
			v.Add(field+"."+name, "is not a field of a retry policy (maxAttempts, backoff, intervalSeconds, maxIntervalSeconds)")
		}
	}
	if len(*v) > before {
		return nil
	}
	return CheckRetryPolicy(v, field, f)
}

// CheckRetryPolicy checks a retry policy's fields and returns the policy
// with the defaults filled in (nil when it is wrong): maxAttempts 1 to 30
// (5), backoff fixed (the default) or exponential, intervalSeconds 1 to a
// day (300), maxIntervalSeconds from intervalSeconds to a day (a fixed
// policy's is its interval; an exponential one's defaults to an hour, or
// the interval when longer), and at most 3 days from the first attempt
// to the last (RetrySpan).
func CheckRetryPolicy(v *Errors, field string, f RetryPolicyFields) *store.RetryPolicy {
	p := DefaultRetryPolicy
	before := len(*v)
	if f.MaxAttempts != nil {
		if p.MaxAttempts = *f.MaxAttempts; p.MaxAttempts < 1 || p.MaxAttempts > MaxRetryAttempts {
			v.Add(field+".maxAttempts", fmt.Sprintf("must be from 1 to %d attempts, the first included", MaxRetryAttempts))
		}
	}
	if f.Backoff != nil {
		if p.Backoff = *f.Backoff; p.Backoff != store.BackoffFixed && p.Backoff != store.BackoffExponential {
			v.Add(field+".backoff", fmt.Sprintf("%q: must be %q or %q", p.Backoff, store.BackoffFixed, store.BackoffExponential))
		}
	}
	if f.IntervalSeconds != nil {
		if p.IntervalSeconds = *f.IntervalSeconds; p.IntervalSeconds < 1 || p.IntervalSeconds > MaxRetryInterval {
			v.Add(field+".intervalSeconds", fmt.Sprintf("must be from 1 to %d seconds", MaxRetryInterval))
		}
	}
	switch {
	case f.MaxIntervalSeconds != nil:
		p.MaxIntervalSeconds = *f.MaxIntervalSeconds
		switch {
		case p.Backoff == store.BackoffFixed && p.MaxIntervalSeconds != p.IntervalSeconds:
			v.Add(field+".maxIntervalSeconds", "must equal intervalSeconds with backoff fixed, or be left out")
		case p.MaxIntervalSeconds < p.IntervalSeconds || p.MaxIntervalSeconds > MaxRetryInterval:
			v.Add(field+".maxIntervalSeconds", fmt.Sprintf("must be from intervalSeconds (%d) to %d seconds", p.IntervalSeconds, MaxRetryInterval))
		}
	case p.Backoff == store.BackoffExponential:
		p.MaxIntervalSeconds = max(p.IntervalSeconds, DefaultRetryCap)
	default:
		p.MaxIntervalSeconds = p.IntervalSeconds
	}
	if len(*v) > before {
		return nil
	}
	if span := RetrySpan(p); span > MaxRetrySpan {
		v.Add(field, fmt.Sprintf("retries for %d seconds from the first attempt to the last; at most %d (3 days): fewer attempts or shorter intervals", span, MaxRetrySpan))
		return nil
	}
	return &p
}
