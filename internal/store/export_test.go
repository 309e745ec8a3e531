package store

import "context"

// OnDelivery routes a statement of st's to the dispatcher's pool, as the
// Delivery adapter does.
func OnDelivery(ctx context.Context) context.Context { return onDelivery(ctx) }

// FiringColumns are the columns of a webhook a firing that hands over
// reads.
const FiringColumns = targetColumns + ", " + handoffColumns

// IDRange is idRange, for its unit test.
var IDRange = idRange
