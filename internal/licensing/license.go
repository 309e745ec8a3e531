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

// License grants use of a product, as the API answers it and every
// license.* event carries it.
type License struct {
	ID                 string          `json:"id"`
	Key                string          `json:"key"`
	ProductID          string          `json:"productId"`
	UserID             *string         `json:"userId"`
	ExpiresAt          *Time           `json:"expiresAt"`
	Validity           *int64          `json:"validity"`
	AllowedActivations *int64          `json:"allowedActivations"`
	TotalActivations   int64           `json:"totalActivations"`
	Metadata           json.RawMessage `json:"metadata"`
	CreatedAt          Time            `json:"createdAt"`
	UpdatedAt          Time            `json:"updatedAt"`

	// firstActivated is whether the license was ever activated; it is not
	// shown, and keeps license.first-activated to once per license, ever.
	firstActivated bool
}

// LicenseInput creates a license.
type LicenseInput struct {
	ProductID          Optional[string]          `json:"productId"`
	UserID             Optional[string]          `json:"userId"`
	Key                Optional[string]          `json:"key"`
	Validity           Optional[int64]           `json:"validity"`
	ExpiresAt          Optional[string]          `json:"expiresAt"`
	AllowedActivations Optional[int64]           `json:"allowedActivations"`
	Metadata           Optional[json.RawMessage] `json:"metadata"`
}

// LicensePatch changes a license; null clears userId, validity and
// allowedActivations.
type LicensePatch struct {
	UserID             Optional[string]          `json:"userId"`
	Validity           Optional[int64]           `json:"validity"`
	AllowedActivations Optional[int64]           `json:"allowedActivations"`
	Metadata           Optional[json.RawMessage] `json:"metadata"`
}

// ExpiresAtInput sets a license's expiry; null makes it perpetual.
type ExpiresAtInput struct {
	ExpiresAt Optional[string] `json:"expiresAt"`
}

// LicenseFilter narrows a license list; "" matches any.
type LicenseFilter struct {
	ProductID, UserID string
	store.Page
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9-]{4,128}$`)

const licenseColumns = `id, key, product_id, user_id, expires_at, validity, allowed_activations, total_activations,
first_activated_at, metadata, created_at, updated_at`

func scanLicense(sc scanner) (License, error) {
	var l License
	var user sql.NullString
	var expires, validity, allowed, first sql.NullInt64
	var meta string
	var c, u int64
	if err := sc.Scan(&l.ID, &l.Key, &l.ProductID, &user, &expires, &validity, &allowed, &l.TotalActivations,
		&first, &meta, &c, &u); err != nil {
		return License{}, err
	}
	if user.Valid {
		l.UserID = &user.String
	}
	l.ExpiresAt = optFromMS(nullInt(expires))
	l.Validity, l.AllowedActivations = nullInt(validity), nullInt(allowed)
	l.firstActivated = first.Valid
	l.Metadata, l.CreatedAt, l.UpdatedAt = json.RawMessage(meta), fromMS(c), fromMS(u)
	return l, nil
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func getLicense(ctx context.Context, q querier, accountID, id, lock string) (License, error) {
	l, err := scanLicense(q.QueryRow(ctx, `SELECT `+licenseColumns+` FROM licenses WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return License{}, notFound("license")
	}
	if err != nil {
		return License{}, fmt.Errorf("read license: %w", err)
	}
	return l, nil
}

// validity checks a validity field: null, or 1 second to 100 years.
func (e *InvalidError) validity(o Optional[int64]) {
	if o.Value != nil && (*o.Value < 1 || *o.Value > maxValidity) {
		e.add("validity", fmt.Sprintf("must be a number of seconds from 1 to %d, or null", maxValidity))
	}
}

// allowed checks an allowedActivations field: null (no limit) or at least 1.
func (e *InvalidError) allowed(o Optional[int64]) {
	if o.Value != nil && *o.Value < 1 {
		e.add("allowedActivations", "must be at least 1, or null for no limit")
	}
}

// userRef checks a userId field and that it names a user of the account.
func userRef(ctx context.Context, tx *store.Tx, accountID string, o Optional[string], v *InvalidError) (*string, error) {
	if o.Value == nil {
		return nil, nil
	}
	id := v.id("userId", *o.Value)
	if id == "" {
		return nil, nil
	}
	ok, err := exists(ctx, tx, "users", accountID, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		v.add("userId", "names no user of this account")
	}
	return &id, nil
}

// CreateLicense creates a license, generating its key when none is given,
// and fires license.created. Without expiresAt a license with a validity
// expires validity seconds from now, and one without never does.
func (s *Service) CreateLicense(ctx context.Context, accountID string, in LicenseInput) (License, error) {
	var v InvalidError
	var productID string
	if v.present("productId", in.ProductID.Set, in.ProductID.Value != nil, true) {
		productID = v.id("productId", *in.ProductID.Value)
	}
	if v.present("key", in.Key.Set, in.Key.Value != nil, false) && !keyPattern.MatchString(*in.Key.Value) {
		v.add("key", "must be 4 to 128 letters, digits or hyphens")
	}
	v.validity(in.Validity)
	v.allowed(in.AllowedActivations)
	var expires *Time
	if in.ExpiresAt.Value != nil {
		expires = v.when("expiresAt", *in.ExpiresAt.Value)
	}
	meta := v.metadata(in.Metadata)
	var userID *string
	if in.UserID.Value != nil {
		if id := v.id("userId", *in.UserID.Value); id != "" {
			userID = &id
		}
	}
	if err := v.err(); err != nil {
		return License{}, err
	}
	if err := s.pace(ctx, accountID); err != nil {
		return License{}, err
	}
	now := fromMS(store.MS(s.store.Now()))
	l := License{ProductID: productID, UserID: userID, ExpiresAt: expires,
		Validity: in.Validity.Value, AllowedActivations: in.AllowedActivations.Value, Metadata: meta, CreatedAt: now, UpdatedAt: now}
	if !in.ExpiresAt.Set && l.Validity != nil {
		t := Time{now.Add(time.Duration(*l.Validity) * time.Second)}
		l.ExpiresAt = &t
	}
	for tries := 1; ; tries++ {
		l.ID, l.Key = store.NewID(), NewKey()
		if in.Key.Value != nil {
			l.Key = *in.Key.Value
		}
		made, err := s.insertLicense(ctx, accountID, l)
		if err != nil {
			return License{}, uniqueOr(err, errKeyTaken)
		}
		if made {
			break
		}
		// Nothing inserted: the product or the user is not the account's,
		// or the key is taken. Only now are they looked up.
		if err := refusedLicense(ctx, s.store, accountID, l); err != nil {
			return License{}, err
		}
		if in.Key.Value != nil {
			return License{}, errKeyTaken
		}
		if tries == 3 {
			// 125 random bits colliding three times means a broken
			// random source.
			return License{}, errors.New("generate license key: every key generated was taken")
		}
	}
	if l.ExpiresAt != nil {
		s.store.ExpiriesChanged()
	}
	return l, nil
}

var errKeyTaken = ConflictError{"a license with this key already exists in the account"}

// insertLicense inserts l and fires license.created when its product, and
// its user if it has one, are the account's and no license of the account
// has its key, and says whether it did. One statement instead of a look-up
// each: the key is checked by the unique index (account_id, key) itself,
// with no plan to choose. The product and user are read, not locked: the
// licenses' foreign keys lock them against a concurrent delete at the
// statement's end, and one deleted since the read fails the statement on
// its key, having written nothing, and the change is made again and finds
// it gone (ChangeAndFire), where a lock here would take each row twice
// (decision 0111). The license, the plan of its
// expiry and its event are one change (store.ChangeAndFire: one statement
// on PostgreSQL, where a transaction would cost three round trips more).
func (s *Service) insertLicense(ctx context.Context, accountID string, l License) (bool, error) {
	change := store.Change{SQL: `INSERT INTO licenses (id, account_id, product_id, user_id, key, expires_at, validity,
allowed_activations, metadata, created_at, updated_at)
SELECT v.id, v.account_id, v.product_id, v.user_id, v.key, v.expires_at, v.validity,
  v.allowed_activations, v.metadata, v.created_at, v.updated_at
FROM (SELECT CAST(? AS TEXT) AS id, CAST(? AS TEXT) AS account_id, CAST(? AS TEXT) AS product_id, CAST(? AS TEXT) AS user_id,
  CAST(? AS TEXT) AS key, CAST(? AS BIGINT) AS expires_at, CAST(? AS BIGINT) AS validity, CAST(? AS BIGINT) AS allowed_activations,
  CAST(? AS TEXT) AS metadata, CAST(? AS BIGINT) AS created_at, CAST(? AS BIGINT) AS updated_at) AS v
WHERE EXISTS (SELECT 1 FROM products WHERE account_id = ? AND id = ?)
  AND (CAST(? AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM users WHERE account_id = ? AND id = ?))
ON CONFLICT (account_id, key) DO NOTHING
RETURNING id`,
		Args: []any{l.ID, accountID, l.ProductID, l.UserID, l.Key, optMS(l.ExpiresAt), l.Validity, l.AllowedActivations,
			string(l.Metadata), store.MS(l.CreatedAt.Time), store.MS(l.UpdatedAt.Time),
			accountID, l.ProductID, l.UserID, accountID, l.UserID}}
	if l.ExpiresAt != nil {
		change.Expiry = &store.ExpiryPlan{AccountID: accountID, LicenseID: l.ID, ExpiresAt: l.ExpiresAt.Time}
	}
	change.Batch = &store.ChangeBatch{SQL: insertLicenses, Columns: licenseRowColumns, Key: l.ID, Row: map[string]any{
		"id": l.ID, "account_id": accountID, "product_id": l.ProductID, "user_id": l.UserID, "key": l.Key,
		"expires_at": optMS(l.ExpiresAt), "validity": l.Validity, "allowed_activations": l.AllowedActivations,
		"metadata": string(l.Metadata), "created_at": store.MS(l.CreatedAt.Time), "updated_at": store.MS(l.UpdatedAt.Time)}}
	made, err := s.store.ChangeAndFire(ctx, change, store.Firing{AccountID: accountID, License: l.ID, First: true, Kind: event.LicenseCreated, Data: l})
	if err != nil {
		return false, fmt.Errorf("insert license: %w", err)
	}
	return made, nil
}

// insertLicenses is insertLicense's statement over a set of licenses
// (licenseRowColumns), for the licenses created at once on PostgreSQL
// (store.ChangeBatch, decision 0112): each is made or not as it would be
// alone, and of two with the same key only the first.
const (
	insertLicenses = `INSERT INTO licenses (id, account_id, product_id, user_id, key, expires_at, validity,
allowed_activations, metadata, created_at, updated_at)
SELECT r.id, r.account_id, r.product_id, r.user_id, r.key, r.expires_at, r.validity,
  r.allowed_activations, r.metadata, r.created_at, r.updated_at
FROM changes r
WHERE EXISTS (SELECT 1 FROM products p WHERE p.account_id = r.account_id AND p.id = r.product_id)
  AND (r.user_id IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.account_id = r.account_id AND u.id = r.user_id))
ORDER BY r.herald_item
ON CONFLICT (account_id, key) DO NOTHING
RETURNING id`
	licenseRowColumns = `id TEXT, account_id TEXT, product_id TEXT, user_id TEXT, key TEXT, expires_at BIGINT,
validity BIGINT, allowed_activations BIGINT, metadata TEXT, created_at BIGINT, updated_at BIGINT`
)

// refusedLicense says which of l's product and user is not the account's,
// naming the fields; nil when both are (its key was taken). It reads
// outside the refused change's transaction, which has ended: what it
// reports is as of now.
func refusedLicense(ctx context.Context, q querier, accountID string, l License) error {
	var v InvalidError
	if ok, err := existsIn(ctx, q, "", "products", accountID, l.ProductID); err != nil {
		return err
	} else if !ok {
		v.add("productId", "names no product of this account")
	}
	if l.UserID != nil {
		if ok, err := existsIn(ctx, q, "", "users", accountID, *l.UserID); err != nil {
			return err
		} else if !ok {
			v.add("userId", "names no user of this account")
		}
	}
	return v.err()
}

// License returns one license.
func (s *Service) License(ctx context.Context, accountID, id string) (License, error) {
	return getLicense(ctx, s.store, accountID, id, "")
}

// Licenses lists an account's licenses, newest first.
func (s *Service) Licenses(ctx context.Context, accountID string, f LicenseFilter) ([]License, string, error) {
	q := `SELECT ` + licenseColumns + ` FROM licenses WHERE account_id = ?`
	args := []any{accountID}
	if f.ProductID != "" {
		q, args = q+` AND product_id = ?`, append(args, f.ProductID)
	}
	if f.UserID != "" {
		q, args = q+` AND user_id = ?`, append(args, f.UserID)
	}
	out, next, err := list(ctx, s, q, args, f.Page, scanLicense, func(l License) string { return l.ID })
	if err != nil {
		return nil, "", fmt.Errorf("list licenses: %w", err)
	}
	return out, next, nil
}

// changeLicense runs change on a locked license, writes the fields a change
// may touch, and fires kind with the license as it is afterwards.
func (s *Service) changeLicense(ctx context.Context, accountID, id string, kind event.Kind,
	change func(tx *store.Tx, l *License, now time.Time) error) (License, error) {
	var l License
	moved := false
	err := s.change(ctx, accountID, func(tx *store.Tx) (err error) {
		if l, err = getLicense(ctx, tx, accountID, id, tx.ForUpdate()); err != nil {
			return err
		}
		if kind == event.LicenseRenewed || kind == event.LicenseExpiresAtUpdated {
			// Held before anything is written or fired: an expiry firing
			// holding it goes first (with the license as it was), and one
			// after sees the moved instant's plan.
			if err := tx.HoldExpiry(ctx, id); err != nil {
				return err
			}
		}
		before := expiryMS(l.ExpiresAt)
		now := fromMS(store.MS(tx.Now()))
		if err := change(tx, &l, now.Time); err != nil {
			return err
		}
		l.UpdatedAt = now
		if _, err := tx.Exec(ctx, `UPDATE licenses SET user_id = ?, expires_at = ?, validity = ?, allowed_activations = ?, metadata = ?,
updated_at = ? WHERE account_id = ? AND id = ?`, l.UserID, optMS(l.ExpiresAt), l.Validity, l.AllowedActivations, string(l.Metadata),
			store.MS(now.Time), accountID, id); err != nil {
			return fmt.Errorf("update license: %w", err)
		}
		if _, err = tx.FireLicense(ctx, accountID, l.ID, kind, l); err != nil {
			return err
		}
		// A moved expiresAt re-arms the expiry events for the new instant.
		if after := expiryMS(l.ExpiresAt); !sameMS(before, after) {
			moved = true
			var at *time.Time
			if l.ExpiresAt != nil {
				at = &l.ExpiresAt.Time
			}
			return tx.PlanExpiry(ctx, accountID, id, at)
		}
		return nil
	})
	if err == nil && moved {
		s.store.ExpiriesChanged()
	}
	return l, err
}

func expiryMS(t *Time) *int64 {
	if t == nil {
		return nil
	}
	v := store.MS(t.Time)
	return &v
}

func sameMS(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// UpdateLicense changes a license's user, validity, activation limit or
// metadata and fires license.updated, the generic license change. It never
// moves expiresAt: validity is what the next renewal adds.
func (s *Service) UpdateLicense(ctx context.Context, accountID, id string, in LicensePatch) (License, error) {
	return s.changeLicense(ctx, accountID, id, event.LicenseUpdated, func(tx *store.Tx, l *License, _ time.Time) error {
		if !in.UserID.Set && !in.Validity.Set && !in.AllowedActivations.Set && !in.Metadata.Set {
			return invalid("body", "send at least one of userId, validity, allowedActivations, metadata")
		}
		var v InvalidError
		v.validity(in.Validity)
		v.allowed(in.AllowedActivations)
		meta := v.metadata(in.Metadata)
		user, err := userRef(ctx, tx, accountID, in.UserID, &v)
		if err != nil {
			return err
		}
		if err := v.err(); err != nil {
			return err
		}
		if in.UserID.Set {
			l.UserID = user
		}
		if in.Validity.Set {
			l.Validity = in.Validity.Value
		}
		if in.AllowedActivations.Set {
			l.AllowedActivations = in.AllowedActivations.Value
		}
		if in.Metadata.Set {
			l.Metadata = meta
		}
		return nil
	})
}

// RenewLicense extends expiresAt by the license's validity, counted from
// the current expiry, or from now when the license has none or it has
// passed, and fires license.renewed.
func (s *Service) RenewLicense(ctx context.Context, accountID, id string) (License, error) {
	return s.changeLicense(ctx, accountID, id, event.LicenseRenewed, func(_ *store.Tx, l *License, now time.Time) error {
		if l.Validity == nil {
			return invalid("validity", "the license has no validity, so it cannot be renewed; set one with PATCH /v3/licenses/{id}")
		}
		from := now
		if l.ExpiresAt != nil && l.ExpiresAt.After(now) {
			from = l.ExpiresAt.Time
		}
		next := from.Add(time.Duration(*l.Validity) * time.Second)
		if next.After(maxTime) {
			return invalid("validity", "renewing would move expiresAt past 2199-12-31, the latest expiry herald keeps")
		}
		l.ExpiresAt = &Time{next}
		return nil
	})
}

// SetLicenseExpiresAt sets expiresAt directly (null: never expires) and
// fires license.expiresAt.updated.
func (s *Service) SetLicenseExpiresAt(ctx context.Context, accountID, id string, in ExpiresAtInput) (License, error) {
	return s.changeLicense(ctx, accountID, id, event.LicenseExpiresAtUpdated, func(_ *store.Tx, l *License, _ time.Time) error {
		if !in.ExpiresAt.Set {
			return invalid("expiresAt", "is required (null for never)")
		}
		l.ExpiresAt = nil
		if in.ExpiresAt.Value != nil {
			var v InvalidError
			l.ExpiresAt = v.when("expiresAt", *in.ExpiresAt.Value)
			return v.err()
		}
		return nil
	})
}

// DeleteLicense deletes a license and fires license.deleted with the
// license as it was. Its activations go with it by cascade, firing nothing.
func (s *Service) DeleteLicense(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		l, err := getLicense(ctx, tx, accountID, id, tx.ForUpdate())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM licenses WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete license: %w", err)
		}
		_, err = tx.FireLicense(ctx, accountID, l.ID, event.LicenseDeleted, l)
		return err
	})
}
