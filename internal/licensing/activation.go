package licensing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Activation is a machine activated on a license, as the API answers it and
// activation events carry it.
type Activation struct {
	ID          string  `json:"id"`
	LicenseID   string  `json:"licenseId"`
	Fingerprint string  `json:"fingerprint"`
	Hostname    *string `json:"hostname"`
	OS          *string `json:"os"`
	CreatedAt   Time    `json:"createdAt"`
}

// ActivationInput activates a machine on the license with LicenseKey.
type ActivationInput struct {
	LicenseKey  Optional[string] `json:"licenseKey"`
	Fingerprint Optional[string] `json:"fingerprint"`
	Hostname    Optional[string] `json:"hostname"`
	OS          Optional[string] `json:"os"`
}

// ActivationFilter narrows an activation list; "" matches any.
type ActivationFilter struct {
	LicenseID string
	store.Page
}

const activationColumns = `id, license_id, fingerprint, hostname, os, created_at`

func scanActivation(sc scanner) (Activation, error) {
	var a Activation
	var host, os sql.NullString
	var c int64
	if err := sc.Scan(&a.ID, &a.LicenseID, &a.Fingerprint, &host, &os, &c); err != nil {
		return Activation{}, err
	}
	if host.Valid {
		a.Hostname = &host.String
	}
	if os.Valid {
		a.OS = &os.String
	}
	a.CreatedAt = fromMS(c)
	return a, nil
}

func getActivation(ctx context.Context, q querier, accountID, id, lock string) (Activation, error) {
	a, err := scanActivation(q.QueryRow(ctx, `SELECT `+activationColumns+` FROM activations WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Activation{}, notFound("activation")
	}
	if err != nil {
		return Activation{}, fmt.Errorf("read activation: %w", err)
	}
	return a, nil
}

func (in *ActivationInput) validate() error {
	var v InvalidError
	if v.present("licenseKey", in.LicenseKey.Set, in.LicenseKey.Value != nil, true) {
		v.text("licenseKey", *in.LicenseKey.Value, 1, 128)
	}
	if v.present("fingerprint", in.Fingerprint.Set, in.Fingerprint.Value != nil, true) {
		v.text("fingerprint", *in.Fingerprint.Value, 1, maxFingerprint)
	}
	if in.Hostname.Value != nil {
		v.text("hostname", *in.Hostname.Value, 1, 255)
	}
	if in.OS.Value != nil {
		v.text("os", *in.OS.Value, 1, 255)
	}
	return v.err()
}

// CreateActivation activates a machine on a license and fires
// activation.created; on the first activation the license ever had it also
// fires license.first-activated, once per license, ever (deleting every
// activation and activating again does not fire it twice). The license's
// totalActivations goes up by one; that fires no license.updated and leaves
// its updatedAt alone.
//
// A key no license of the account has, an expired license and a license at
// its activation limit are refused naming licenseKey; a fingerprint already
// activated on the license is a conflict.
func (s *Service) CreateActivation(ctx context.Context, accountID string, in ActivationInput) (Activation, error) {
	if err := in.validate(); err != nil {
		return Activation{}, err
	}
	key, fingerprint := *in.LicenseKey.Value, *in.Fingerprint.Value
	var a Activation
	err := s.change(ctx, accountID, func(tx *store.Tx) error {
		// The lock serialises activations of one license, so the limit
		// holds when several machines activate at once.
		l, err := scanLicense(tx.QueryRow(ctx, `SELECT `+licenseColumns+` FROM licenses WHERE account_id = ? AND key = ?`+tx.ForUpdate(), accountID, key))
		if errors.Is(err, sql.ErrNoRows) {
			return invalid("licenseKey", "no license of this account has this key")
		}
		if err != nil {
			return fmt.Errorf("read license: %w", err)
		}
		now := fromMS(store.MS(tx.Now()))
		switch {
		case l.ExpiresAt != nil && !l.ExpiresAt.After(now.Time):
			return invalid("licenseKey", "the license expired at "+l.ExpiresAt.UTC().Format(event.TimeFormat))
		case l.AllowedActivations != nil && l.TotalActivations >= *l.AllowedActivations:
			return invalid("licenseKey", fmt.Sprintf("the license already has its %d allowed activations", *l.AllowedActivations))
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM activations WHERE license_id = ? AND fingerprint = ?`, l.ID, fingerprint).Scan(&n); err != nil {
			return fmt.Errorf("check fingerprint: %w", err)
		}
		if n > 0 {
			return errFingerprintActive
		}
		a = Activation{ID: store.NewID(), LicenseID: l.ID, Fingerprint: fingerprint, Hostname: in.Hostname.Value, OS: in.OS.Value, CreatedAt: now}
		if _, err := tx.Exec(ctx, `INSERT INTO activations (id, account_id, license_id, fingerprint, hostname, os, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			a.ID, accountID, a.LicenseID, a.Fingerprint, a.Hostname, a.OS, store.MS(now.Time)); err != nil {
			return uniqueOr(fmt.Errorf("insert activation: %w", err), errFingerprintActive)
		}
		if _, err := tx.Exec(ctx, `UPDATE licenses SET total_activations = total_activations + 1,
first_activated_at = COALESCE(first_activated_at, ?) WHERE id = ?`, store.MS(now.Time), l.ID); err != nil {
			return fmt.Errorf("count activation: %w", err)
		}
		if _, err := tx.FireLicense(ctx, accountID, l.ID, event.ActivationCreated, a); err != nil {
			return err
		}
		if l.firstActivated {
			return nil
		}
		l.TotalActivations++
		_, err = tx.FireLicense(ctx, accountID, l.ID, event.LicenseFirstActivated, l)
		return err
	})
	return a, err
}

var errFingerprintActive = ConflictError{"this fingerprint is already activated on the license"}

// Activation returns one activation.
func (s *Service) Activation(ctx context.Context, accountID, id string) (Activation, error) {
	return getActivation(ctx, s.store, accountID, id, "")
}

// Activations lists an account's activations, newest first.
func (s *Service) Activations(ctx context.Context, accountID string, f ActivationFilter) ([]Activation, string, error) {
	q := `SELECT ` + activationColumns + ` FROM activations WHERE account_id = ?`
	args := []any{accountID}
	if f.LicenseID != "" {
		q, args = q+` AND license_id = ?`, append(args, f.LicenseID)
	}
	out, next, err := list(ctx, s, q, args, f.Page, scanActivation, func(a Activation) string { return a.ID })
	if err != nil {
		return nil, "", fmt.Errorf("list activations: %w", err)
	}
	return out, next, nil
}

// DeleteActivation deactivates a machine, freeing a slot on its license,
// and fires activation.deleted with the activation as it was, and no
// license event. Only this direct deletion fires it: activations deleted
// with their license fire nothing.
func (s *Service) DeleteActivation(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		// Lock the license before the activation, in the order that
		// CreateActivation and DeleteLicense take them, so that concurrent
		// calls on PostgreSQL wait for each other instead of deadlocking.
		a, err := getActivation(ctx, tx, accountID, id, "")
		if err != nil {
			return err
		}
		if _, err := exists(ctx, tx, "licenses", accountID, a.LicenseID); err != nil {
			return err
		}
		if a, err = getActivation(ctx, tx, accountID, id, tx.ForUpdate()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM activations WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete activation: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE licenses SET total_activations = total_activations - 1 WHERE account_id = ? AND id = ?`,
			accountID, a.LicenseID); err != nil {
			return fmt.Errorf("uncount activation: %w", err)
		}
		_, err = tx.FireLicense(ctx, accountID, a.LicenseID, event.ActivationDeleted, a)
		return err
	})
}
