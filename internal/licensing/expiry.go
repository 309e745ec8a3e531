package licensing

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// ExpiryBatch is how many licenses one firing transaction takes: big enough
// that a second's worth of expiries costs few commits, small enough that
// SQLite's writer, which the API's changes share, is held briefly.
const ExpiryBatch = 200

// FireDueExpiries fires the expiry events due at the store's clock, oldest
// due first, for at most limit licenses, and returns how many it fired.
// Each license is claimed (on PostgreSQL, rows another process claimed are
// passed over), read, fired and recorded in one transaction, one event per
// license: license.expiring-soon when it has not fired for the license's
// expiresAt, else license.expired. A license whose expired is due too is
// then due again at its expiresAt, and fires it at that instant's turn, so
// expiring-soon always comes first. The events carry the license as it is
// now; triggeredAt is the firing time.
func (s *Service) FireDueExpiries(ctx context.Context, limit int) (int, error) {
	n := 0
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		due, err := tx.ClaimDueExpiries(ctx, now, limit)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]string, len(due))
		for i, d := range due {
			ids[i] = d.LicenseID
			l, err := getLicense(ctx, tx, d.AccountID, d.LicenseID, "")
			if err != nil {
				return fmt.Errorf("fire expiry events: %w", err)
			}
			kind := event.LicenseExpired
			if d.Soon {
				kind = event.LicenseExpiringSoon
			}
			if _, err := tx.Fire(ctx, d.AccountID, kind, l); err != nil {
				return err
			}
		}
		n = len(due)
		return tx.RecordExpiriesFired(ctx, ids)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// NextExpiryDue is when the next expiry event is due; ok is false when no
// license has one planned.
func (s *Service) NextExpiryDue(ctx context.Context) (at time.Time, ok bool, err error) {
	return s.store.NextExpiryDue(ctx)
}
