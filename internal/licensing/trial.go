package licensing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// TrialActivation is a machine running a product on trial, as the API
// answers it and trial-activation events carry it.
type TrialActivation struct {
	ID          string `json:"id"`
	ProductID   string `json:"productId"`
	Fingerprint string `json:"fingerprint"`
	ExpiresAt   *Time  `json:"expiresAt"`
	CreatedAt   Time   `json:"createdAt"`
}

// TrialActivationInput starts a trial.
type TrialActivationInput struct {
	ProductID   Optional[string] `json:"productId"`
	Fingerprint Optional[string] `json:"fingerprint"`
	ExpiresAt   Optional[string] `json:"expiresAt"`
}

// TrialActivationFilter narrows a trial activation list; "" matches any.
type TrialActivationFilter struct {
	ProductID string
	store.Page
}

const trialColumns = `id, product_id, fingerprint, expires_at, created_at`

func scanTrial(sc scanner) (TrialActivation, error) {
	var t TrialActivation
	var expires sql.NullInt64
	var c int64
	if err := sc.Scan(&t.ID, &t.ProductID, &t.Fingerprint, &expires, &c); err != nil {
		return TrialActivation{}, err
	}
	t.ExpiresAt, t.CreatedAt = optFromMS(nullInt(expires)), fromMS(c)
	return t, nil
}

func getTrial(ctx context.Context, q querier, accountID, id, lock string) (TrialActivation, error) {
	t, err := scanTrial(q.QueryRow(ctx, `SELECT `+trialColumns+` FROM trial_activations WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return TrialActivation{}, notFound("trial activation")
	}
	if err != nil {
		return TrialActivation{}, fmt.Errorf("read trial activation: %w", err)
	}
	return t, nil
}

var errTrialTaken = ConflictError{"this fingerprint already has a trial of the product"}

// CreateTrialActivation starts a trial of a product on a machine and fires
// trial-activation.created. One trial per machine and product: a
// fingerprint that has one is a conflict until it is deleted.
func (s *Service) CreateTrialActivation(ctx context.Context, accountID string, in TrialActivationInput) (TrialActivation, error) {
	var v InvalidError
	var productID string
	if v.present("productId", in.ProductID.Set, in.ProductID.Value != nil, true) {
		productID = v.id("productId", *in.ProductID.Value)
	}
	if v.present("fingerprint", in.Fingerprint.Set, in.Fingerprint.Value != nil, true) {
		v.text("fingerprint", *in.Fingerprint.Value, 1, maxFingerprint)
	}
	var expires *Time
	if in.ExpiresAt.Value != nil {
		expires = v.when("expiresAt", *in.ExpiresAt.Value)
	}
	if err := v.err(); err != nil {
		return TrialActivation{}, err
	}
	var t TrialActivation
	err := s.change(ctx, accountID, func(tx *store.Tx) error {
		if ok, err := exists(ctx, tx, "products", accountID, productID); err != nil {
			return err
		} else if !ok {
			return invalid("productId", "names no product of this account")
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM trial_activations WHERE product_id = ? AND fingerprint = ?`,
			productID, *in.Fingerprint.Value).Scan(&n); err != nil {
			return fmt.Errorf("check fingerprint: %w", err)
		}
		if n > 0 {
			return errTrialTaken
		}
		now := fromMS(store.MS(tx.Now()))
		t = TrialActivation{ID: store.NewID(), ProductID: productID, Fingerprint: *in.Fingerprint.Value, ExpiresAt: expires, CreatedAt: now}
		if _, err := tx.Exec(ctx, `INSERT INTO trial_activations (id, account_id, product_id, fingerprint, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			t.ID, accountID, t.ProductID, t.Fingerprint, optMS(t.ExpiresAt), store.MS(now.Time)); err != nil {
			return uniqueOr(fmt.Errorf("insert trial activation: %w", err), errTrialTaken)
		}
		_, err := tx.Fire(ctx, accountID, event.TrialActivationCreated, t)
		return err
	})
	return t, err
}

// TrialActivation returns one trial activation.
func (s *Service) TrialActivation(ctx context.Context, accountID, id string) (TrialActivation, error) {
	return getTrial(ctx, s.store, accountID, id, "")
}

// TrialActivations lists an account's trial activations, newest first.
func (s *Service) TrialActivations(ctx context.Context, accountID string, f TrialActivationFilter) ([]TrialActivation, string, error) {
	q := `SELECT ` + trialColumns + ` FROM trial_activations WHERE account_id = ?`
	args := []any{accountID}
	if f.ProductID != "" {
		q, args = q+` AND product_id = ?`, append(args, f.ProductID)
	}
	out, next, err := list(ctx, s, q, args, f.Page, scanTrial, func(t TrialActivation) string { return t.ID })
	if err != nil {
		return nil, "", fmt.Errorf("list trial activations: %w", err)
	}
	return out, next, nil
}

// DeleteTrialActivation deletes a trial activation and fires
// trial-activation.deleted with it as it was; the machine may then start a
// new trial.
func (s *Service) DeleteTrialActivation(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		t, err := getTrial(ctx, tx, accountID, id, tx.ForUpdate())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM trial_activations WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete trial activation: %w", err)
		}
		_, err = tx.Fire(ctx, accountID, event.TrialActivationDeleted, t)
		return err
	})
}
