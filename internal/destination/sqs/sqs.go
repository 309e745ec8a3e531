// Package sqs owns the sqs destination (Amazon SQS): its config (a queue
// URL, a region, an access key or the process's own credentials, an
// endpoint for a compatible server), and sending each attempt, confirmed
// by the message id SQS returns.
package sqs

import (
	"net/url"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the sqs destination type.
type Type struct{}

// New returns the sqs type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.SQS }

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return destination.AWSFields([]destination.Field{
		{Path: "queueUrl", Label: "Queue URL", Kind: destination.Text, Required: true, Address: destination.URLHost, Schemes: []string{"https", "http"},
			Hint: "A FIFO queue (.fifo) gets a message group per license and a deduplication id per webhook's copy of an event"},
	})
}

// Check implements destination.Type.
func (Type) Check(c destination.Config, add func(path, detail string)) { destination.CheckAWS(c, add) }

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	u, err := url.Parse(c.String("queueUrl"))
	if err != nil {
		return "sqs://"
	}
	return "sqs://" + u.Host + u.EscapedPath()
}
