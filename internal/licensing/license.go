package licensing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// License grants use of a product.
type License struct {
	ID                 string
	Key                string
	ProductID          string
	UserID             *string
	ExpiresAt          *time.Time
	Validity           *int64
	AllowedActivations *int
	TotalActivations   int
	Metadata           map[string]any
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// View is the license as the API returns it and license events carry it.
func (l License) View() map[string]any {
	var expires any
	if l.ExpiresAt != nil {
		expires = l.ExpiresAt.UTC().Format(event.TimeFormat)
	}
	meta := l.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	return map[string]any{
		"id": l.ID, "key": l.Key, "productId": l.ProductID, "userId": l.UserID, "expiresAt": expires,
		"validity": l.Validity, "allowedActivations": l.AllowedActivations, "totalActivations": l.TotalActivations,
		"metadata": meta, "createdAt": l.CreatedAt.UTC().Format(event.TimeFormat), "updatedAt": l.UpdatedAt.UTC().Format(event.TimeFormat),
	}
}

// LicenseInput creates a license.
type LicenseInput struct {
	ProductID          *string        `json:"productId"`
	UserID             *string        `json:"userId"`
	Key                *string        `json:"key"`
	Validity           *int64         `json:"validity"`
	ExpiresAt          *time.Time     `json:"expiresAt"`
	AllowedActivations *int           `json:"allowedActivations"`
	Metadata           map[string]any `json:"metadata"`
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9-]{4,128}$`)

// CreateLicense creates a license, generating its key when none is given, and
// fires license.created.
func (s *Service) CreateLicense(ctx context.Context, accountID string, in LicenseInput) (License, error) {
	var v InvalidError
	if in.ProductID == nil || *in.ProductID == "" {
		v.add("productId", "is required")
	}
	if in.Key != nil && !keyPattern.MatchString(*in.Key) {
		v.add("key", "must be 4 to 128 letters, digits or dashes")
	}
	if in.Validity != nil && *in.Validity <= 0 {
		v.add("validity", "must be a positive number of seconds")
	}
	if in.AllowedActivations != nil && *in.AllowedActivations < 0 {
		v.add("allowedActivations", "must not be negative")
	}
	if err := v.err(); err != nil {
		return License{}, err
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	meta, _ := json.Marshal(in.Metadata)
	var l License
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM products WHERE account_id = ? AND id = ?`, accountID, *in.ProductID).Scan(&n); err != nil {
			return fmt.Errorf("check product: %w", err)
		}
		if n == 0 {
			return InvalidError{{"productId", "no such product"}}
		}
		now := store.FromMS(store.MS(tx.Now()))
		l = License{ID: store.NewID(), Key: NewKey(), ProductID: *in.ProductID, UserID: in.UserID, Validity: in.Validity,
			AllowedActivations: in.AllowedActivations, Metadata: in.Metadata, CreatedAt: now, UpdatedAt: now}
		if in.Key != nil {
			l.Key = *in.Key
		}
		if in.ExpiresAt != nil {
			t := store.FromMS(store.MS(*in.ExpiresAt))
			l.ExpiresAt = &t
		} else if in.Validity != nil {
			t := now.Add(time.Duration(*in.Validity) * time.Second)
			l.ExpiresAt = &t
		}
		var expires any
		if l.ExpiresAt != nil {
			expires = store.MS(*l.ExpiresAt)
		}
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM licenses WHERE account_id = ? AND key = ?`, accountID, l.Key).Scan(&n); err != nil {
			return fmt.Errorf("check key: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("key: a license with this key exists: %w", store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO licenses (id, account_id, product_id, user_id, key, expires_at, validity, allowed_activations, metadata, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, l.ID, accountID, l.ProductID, l.UserID, l.Key, expires, l.Validity, l.AllowedActivations,
			string(meta), store.MS(now), store.MS(now)); err != nil {
			return fmt.Errorf("insert license: %w", err)
		}
		_, err := tx.Fire(ctx, accountID, event.LicenseCreated, l.View())
		return err
	})
	return l, err
}

// License returns one license.
func (s *Service) License(ctx context.Context, accountID, id string) (License, error) {
	var l License
	var user sql.NullString
	var expires, validity, allowed sql.NullInt64
	var meta string
	var c, u int64
	err := s.store.QueryRow(ctx, `SELECT id, key, product_id, user_id, expires_at, validity, allowed_activations, total_activations, metadata, created_at, updated_at
FROM licenses WHERE account_id = ? AND id = ?`, accountID, id).
		Scan(&l.ID, &l.Key, &l.ProductID, &user, &expires, &validity, &allowed, &l.TotalActivations, &meta, &c, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return License{}, notFound("license")
	}
	if err != nil {
		return License{}, fmt.Errorf("read license: %w", err)
	}
	if user.Valid {
		l.UserID = &user.String
	}
	l.ExpiresAt = store.OptTime(expires)
	if validity.Valid {
		l.Validity = &validity.Int64
	}
	if allowed.Valid {
		n := int(allowed.Int64)
		l.AllowedActivations = &n
	}
	json.Unmarshal([]byte(meta), &l.Metadata)
	l.CreatedAt, l.UpdatedAt = store.FromMS(c), store.FromMS(u)
	return l, nil
}
