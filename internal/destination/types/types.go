// Package types owns the list of destination types this herald publishes
// to: adding a type is a line here and its package.
package types

import (
	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/eventbridge"
	"github.com/heraldhq/herald/internal/destination/kafka"
	"github.com/heraldhq/herald/internal/destination/nats"
	"github.com/heraldhq/herald/internal/destination/pubsub"
	"github.com/heraldhq/herald/internal/destination/rabbitmq"
	"github.com/heraldhq/herald/internal/destination/sqs"
)

// All returns every destination type, in the order a form offers them.
func All() []destination.Type {
	return []destination.Type{rabbitmq.New(), kafka.New(), pubsub.New(), nats.New(), sqs.New(), eventbridge.New()}
}

// Named returns the type named name, and false when there is none.
func Named(name string) (destination.Type, bool) {
	for _, t := range All() {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Names lists the webhook types: http first, then each destination's.
func Names() []string {
	out := []string{destination.HTTP}
	for _, t := range All() {
		out = append(out, t.Name())
	}
	return out
}
