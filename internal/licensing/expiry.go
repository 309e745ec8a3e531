package licensing

import (
	"context"
	"encoding/json"
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
// The licenses are claimed (on PostgreSQL, rows another process claimed are
// passed over), read, fired (one tx.FireBatch for all) and recorded in one
// transaction, a fixed number of statements however many are due, one
// event per license: license.expiring-soon when it has not fired for the license's
// expiresAt, else license.expired. A license whose expired is due too is
// then due again at its expiresAt, and fires it at that instant's turn, so
// expiring-soon always comes first. The events carry the license as it is
// now; triggeredAt is the firing time.
func (s *Service) FireDueExpiries(ctx context.Context, limit int) (int, error) {
	n := 0
	// Ahead of the attempts' records waiting for SQLite's one writer: an
	// expiry is promised within a second of its instant, and at thousands
	// due a second, taking turns with the deliveries' records the firing
	// fell seconds behind (decision 0102).
	err := s.store.InTx(store.WithPrecedence(ctx), func(tx *store.Tx) error {
		now := tx.Now()
		due, err := tx.ClaimDueExpiries(ctx, now, limit)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]string, len(due))
		for i, d := range due {
			ids[i] = d.LicenseID
		}
		licenses, err := claimedLicenses(ctx, tx, ids)
		if err != nil {
			return err
		}
		firings := make([]store.Firing, len(due))
		for i, d := range due {
			l, ok := licenses[d.LicenseID]
			if !ok || l.account != d.AccountID {
				return fmt.Errorf("fire expiry events: license %s claimed but not read", d.LicenseID)
			}
			kind := event.LicenseExpired
			if d.Soon {
				kind = event.LicenseExpiringSoon
			}
			firings[i] = store.Firing{AccountID: d.AccountID, License: d.LicenseID, Kind: kind, Data: l.License}
		}
		if _, err := tx.FireBatch(ctx, firings); err != nil {
			return err
		}
		n = len(due)
		return tx.RecordExpiriesFired(ctx, ids)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// claimedLicense is a license read for its expiry events, with its account.
type claimedLicense struct {
	License
	account string
}

// claimedLicenses reads the licenses a firing transaction claimed (their
// schedule rows held locked: a change of one waits for the firing before it
// plans again), in one statement of one shape for any number (see the
// store's jsonargs.go): one read per batch rather than per license.
func claimedLicenses(ctx context.Context, tx *store.Tx, ids []string) (map[string]claimedLicense, error) {
	list, _ := json.Marshal(ids) // strings always marshal
	rows, err := tx.Query(ctx, `SELECT account_id, `+licenseColumns+` FROM licenses WHERE id IN (SELECT value FROM json_texts(?))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("read claimed licenses: %w", err)
	}
	defer rows.Close()
	out := make(map[string]claimedLicense, len(ids))
	for rows.Next() {
		var c claimedLicense
		l, err := scanLicense(prefixed{rows, &c.account})
		if err != nil {
			return nil, fmt.Errorf("read claimed licenses: %w", err)
		}
		c.License = l
		out[l.ID] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read claimed licenses: %w", err)
	}
	return out, nil
}

// prefixed scans one column into first before those sc's caller asks for.
type prefixed struct {
	sc    scanner
	first any
}

func (p prefixed) Scan(dest ...any) error { return p.sc.Scan(append([]any{p.first}, dest...)...) }

// NextExpiryDue is when the next expiry event is due; ok is false when no
// license has one planned.
func (s *Service) NextExpiryDue(ctx context.Context) (at time.Time, ok bool, err error) {
	return s.store.NextExpiryDue(ctx)
}
