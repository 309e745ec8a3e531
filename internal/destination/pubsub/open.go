package pubsub

import (
	"context"

	"github.com/heraldhq/herald/internal/destination"
)

// Open implements destination.Type.
func (Type) Open(context.Context, destination.Config, destination.Env) (destination.Client, error) {
	return nil, destination.ErrNotBuilt
}
