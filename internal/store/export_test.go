package store

import "context"

// OnDelivery routes a statement of st's to the dispatcher's pool, as the
// Delivery adapter does.
func OnDelivery(ctx context.Context) context.Context { return onDelivery(ctx) }

// IDRange is idRange, for its unit test.
var IDRange = idRange
