package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
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

// ScanRetryPolicy reads a stored policy; NULL is nil.
func ScanRetryPolicy(webhookID string, text sql.NullString) (*RetryPolicy, error) {
	if !text.Valid {
		return nil, nil
	}
	var p RetryPolicy
	if err := json.Unmarshal([]byte(text.String), &p); err != nil {
		return nil, fmt.Errorf("webhook %s retry policy: %w", webhookID, err)
	}
	return &p, nil
}
