package event

// WebhookHealth is the data of an operational event: the webhook whose health
// changed, as it is after the change, with the latest event it failed to
// deliver. The field order is fixed: it is what receivers hash.
type WebhookHealth struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	URL    string `json:"url"`
	Status string `json:"status"`
	// LatestFailure is nil for a webhook that never failed an event (one
	// suspended by a failure recorded before herald kept failures).
	LatestFailure *Failure `json:"latestFailure"`
}

// Failure is one event that failed after every attempt: which event, and
// the receiver's last answer.
type Failure struct {
	LogID   string `json:"logId"`
	EventID string `json:"eventId"`
	Event   Kind   `json:"event"`
	// StatusCode is the receiver's last status code; nil when no answer
	// came (a time-out or a refused connection).
	StatusCode *int   `json:"statusCode"`
	Reason     string `json:"reason"`
	FailedAt   string `json:"failedAt"` // TimeFormat
}
