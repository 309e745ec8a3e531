package store

import "github.com/heraldhq/herald/internal/attempt"

// The types the store shares with the dispatcher live in package attempt,
// a leaf; the store names them too, so that its callers (the API, the
// portal) read one package.
type (
	ClaimParams    = attempt.ClaimParams
	Claim          = attempt.Claim
	Held           = attempt.Held
	Result         = attempt.Result
	Outcome        = attempt.Outcome
	AttemptRecord  = attempt.AttemptRecord
	Suspension     = attempt.Suspension
	Grant          = attempt.Grant
	LogStatus      = attempt.LogStatus
	Header         = attempt.Header
	AttemptHeaders = attempt.AttemptHeaders
	RecoveryStatus = attempt.RecoveryStatus
	Recovery       = attempt.Recovery
	RetryPolicy    = attempt.RetryPolicy
)

// Results, log statuses, triggers and bounds: package attempt's.
const (
	Delivered    = attempt.Delivered
	Retry        = attempt.Retry
	Exhausted    = attempt.Exhausted
	Cancel       = attempt.Cancel
	ResendFailed = attempt.ResendFailed
	Release      = attempt.Release

	Queued    = attempt.Queued
	Pending   = attempt.Pending
	Retrying  = attempt.Retrying
	Succeeded = attempt.Succeeded
	Failed    = attempt.Failed
	Cancelled = attempt.Cancelled

	TriggerAutomatic = attempt.TriggerAutomatic
	TriggerResend    = attempt.TriggerResend

	MaxResponseBody       = attempt.MaxResponseBody
	MaxAttemptHeaders     = attempt.MaxAttemptHeaders
	MaxAttemptHeaderBytes = attempt.MaxAttemptHeaderBytes

	RecoveryRunning   = attempt.RecoveryRunning
	RecoveryDone      = attempt.RecoveryDone
	RecoveryCancelled = attempt.RecoveryCancelled

	BackoffFixed       = attempt.BackoffFixed
	BackoffExponential = attempt.BackoffExponential
)

// ErrLeaseLost is attempt.ErrLeaseLost.
var ErrLeaseLost = attempt.ErrLeaseLost

// HeaderLines is attempt.HeaderLines.
func HeaderLines(h map[string][]string) []Header { return attempt.HeaderLines(h) }
