package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// RetryPolicy is how a webhook's failed deliveries are retried: how many
// attempts in all, the first included, and the wait before each retry,
// the same every time (BackoffFixed) or doubling from Interval up to
// MaxInterval (BackoffExponential, with jitter: internal/delivery).
// Seconds, as the API takes them.
type RetryPolicy struct {
	MaxAttempts        int    `json:"maxAttempts"`
	Backoff            string `json:"backoff"`
	IntervalSeconds    int    `json:"intervalSeconds"`
	MaxIntervalSeconds int    `json:"maxIntervalSeconds"`
}

// Backoffs of a retry policy.
const (
	BackoffFixed       = "fixed"
	BackoffExponential = "exponential"
)

// retryPolicyArg stores a policy as JSON, nil (the operator's default) as
// NULL.
func retryPolicyArg(p *RetryPolicy) any {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p) // a struct of ints and a string always marshals
	return string(b)
}

// scanRetryPolicy reads a stored policy; NULL is nil.
func scanRetryPolicy(webhookID string, text sql.NullString) (*RetryPolicy, error) {
	if !text.Valid {
		return nil, nil
	}
	var p RetryPolicy
	if err := json.Unmarshal([]byte(text.String), &p); err != nil {
		return nil, fmt.Errorf("webhook %s retry policy: %w", webhookID, err)
	}
	return &p, nil
}
