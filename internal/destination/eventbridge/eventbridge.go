// Package eventbridge owns the eventbridge destination (Amazon
// EventBridge): its config (an event bus, a region, the events' source,
// an access key or the process's own credentials, an endpoint for a
// compatible server), and putting each attempt as an event, confirmed by
// a FailedEntryCount of 0.
package eventbridge

import (
	"net/url"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the eventbridge destination type.
type Type struct{}

// New returns the eventbridge type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.EventBridge }

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return destination.AWSFields([]destination.Field{
		{Path: "eventBusName", Label: "Event bus", Kind: destination.Text, Required: true, Hint: "Its name or ARN"},
		{Path: "source", Label: "Source", Kind: destination.Text, Required: true, Hint: "Each event's Source, which rules match on"},
	})
}

// Check implements destination.Type.
func (Type) Check(c destination.Config, add func(path, detail string)) { destination.CheckAWS(c, add) }

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	return "eventbridge://" + url.PathEscape(c.String("region")) + "/" + url.PathEscape(c.String("eventBusName"))
}
