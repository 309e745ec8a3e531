package validator

import (
	"fmt"
	"time"
)

// The overlap of a webhook token rotation: long enough by default for an
// owner to deploy the next token to a receiver, at least a minute (so a
// receiver sees the second signature before the switch), at most 30 days
// (an old token kept longer is a token not rotated).
const (
	DefaultRotationOverlap = 24 * time.Hour
	MinRotationOverlap     = time.Minute
	MaxRotationOverlap     = 30 * 24 * time.Hour
)

// CheckRotationOverlap checks a rotation's overlap given in seconds and
// returns it as a duration.
func CheckRotationOverlap(v *Errors, field string, seconds int64) time.Duration {
	lo, hi := int64(MinRotationOverlap/time.Second), int64(MaxRotationOverlap/time.Second)
	if seconds < lo || seconds > hi {
		v.Add(field, fmt.Sprintf("must be from %d (a minute) to %d (30 days) seconds; default %d (24 hours)",
			lo, hi, int64(DefaultRotationOverlap/time.Second)))
		return 0
	}
	return time.Duration(seconds) * time.Second
}
