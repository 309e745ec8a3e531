package store

import (
	"database/sql"

	"github.com/heraldhq/herald/internal/attempt"
)

// ClaimColumns are what an attempt needs of a claimed log, its event and
// its webhook, in ScanClaim's order, over logs l, events e and webhooks w.
const ClaimColumns = `l.id, l.account_id, l.webhook_id, l.event_id, l.kind, l.attempt_count, l.lease,
e.body, e.trace_parent, w.url, w.token_sealed, w.next_token_sealed, w.rotation_ends_at, w.enabled, w.status,
w.headers_sealed, w.signature_scheme, w.rate_limit, w.retry_policy`

// ScanClaim reads ClaimColumns, and then into more, whatever follows them.
func (s *Store) ScanClaim(sc interface{ Scan(...any) error }, more ...any) (attempt.Claim, error) {
	var c attempt.Claim
	var kind, health string
	var lease, traceParent sql.NullString
	var sealed, nextSealed, headers []byte
	var rotationEnds, rate sql.NullInt64
	var retry sql.NullString
	if err := sc.Scan(append([]any{&c.LogID, &c.AccountID, &c.WebhookID, &c.EventID, &kind, &c.AttemptCount, &lease,
		&c.Body, &traceParent, &c.URL, &sealed, &nextSealed, &rotationEnds, &c.Enabled, &health, &headers, &c.SignatureScheme, &rate, &retry},
		more...)...); err != nil {
		return attempt.Claim{}, err
	}
	c.RateLimit = int(rate.Int64)
	var err error
	if c.RetryPolicy, err = ScanRetryPolicy(c.WebhookID, retry); err != nil {
		return attempt.Claim{}, err
	}
	if c.Headers, err = s.openHeaders(c.WebhookID, headers); err != nil {
		return attempt.Claim{}, err
	}
	c.Event, c.Health, c.Lease, c.TraceParent = kind, health, lease.String, traceParent.String
	// The tokens of the moment of the claim: a retry or resend is signed
	// with the tokens of its own attempt, not those of the first.
	tokens, err := s.signingTokens(c.WebhookID, sealed, nextSealed, rotationEnds, s.now())
	if err != nil {
		return attempt.Claim{}, err
	}
	c.Token, c.NextToken = tokens.Current, tokens.Next
	return c, nil
}
