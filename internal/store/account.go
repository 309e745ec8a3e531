package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Account is one licensing account: the owner of webhooks, events and logs.
type Account struct {
	ID                string
	Name              string
	NotificationEmail string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	Limits            AccountLimits
	// ExpiringSoonLead is how long before a license's expiresAt
	// license.expiring-soon fires, in seconds.
	ExpiringSoonLead int64
}

// AccountLimits are the limits an operator sets on one account; nil is the
// server-wide default. Webhooks caps the account's webhooks (default: no
// cap). APIRequestsPerSecond is the rate every API request made with any of
// the account's tokens counts against, with bursts of twice as many
// (default: none beyond each token's own --rate-limit).
type AccountLimits struct {
	Webhooks             *int64
	APIRequestsPerSecond *int64
}

// MaxAccountLimit is the largest value either limit takes.
const MaxAccountLimit = 1_000_000

// accountColumns are the columns scanAccount reads, in its order.
const accountColumns = `id, name, notification_email, created_at, updated_at, max_webhooks, api_requests_per_second,
expiring_soon_lead_seconds`

// accountFields are the Scan destinations of accountColumns; done fills in
// what needs converting once scanned.
func accountFields(a *Account) (fields []any, done func()) {
	var c, u int64
	var mw, rps sql.NullInt64
	return []any{&a.ID, &a.Name, &a.NotificationEmail, &c, &u, &mw, &rps, &a.ExpiringSoonLead}, func() {
		a.CreatedAt, a.UpdatedAt = fromMS(c), fromMS(u)
		a.Limits = AccountLimits{}
		if mw.Valid {
			a.Limits.Webhooks = &mw.Int64
		}
		if rps.Valid {
			a.Limits.APIRequestsPerSecond = &rps.Int64
		}
	}
}

// Bootstrap is the first account, created on a first start.
type Bootstrap struct {
	AccountName  string
	OwnerEmail   string
	PasswordHash string
	TokenHash    string
	// NotificationEmail is where suspension emails go; "" means OwnerEmail.
	NotificationEmail string
}

// BootstrapIfEmpty creates the first account, its owner and its API token
// when the database has no account yet. It reports whether it did, and
// returns the account when it did.
//
// Several processes starting at once on an empty database create one account
// between them: each first claims the 'bootstrap' setting, and a second
// claimant waits on the first's uncommitted row, then finds it taken. (Under
// READ COMMITTED, counting accounts alone would let both see none.)
func (s *Store) BootstrapIfEmpty(ctx context.Context, b Bootstrap) (Account, bool, error) {
	var a Account
	created := false
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO settings (name, value) VALUES ('bootstrap', ?) ON CONFLICT (name) DO NOTHING`,
			strconv.FormatInt(ms(tx.Now()), 10))
		if err != nil {
			return err
		}
		if claimed, err := res.RowsAffected(); err != nil || claimed == 0 {
			return err
		}
		// A database bootstrapped before the setting existed has accounts.
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		a, err = tx.CreateAccount(ctx, b)
		created = err == nil
		return err
	})
	if err != nil {
		return Account{}, false, fmt.Errorf("bootstrap: %w", err)
	}
	return a, created, nil
}

// CreateAccount creates an account with its owner and its first API token
// (a write token named FirstTokenName).
func (tx *Tx) CreateAccount(ctx context.Context, b Bootstrap) (Account, error) {
	now := tx.Now()
	a := Account{ID: NewID(), Name: b.AccountName, NotificationEmail: cmp.Or(b.NotificationEmail, b.OwnerEmail), CreatedAt: now.UTC(), UpdatedAt: now.UTC(),
		ExpiringSoonLead: DefaultExpiringSoonLead} // the column's default
	if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, name, notification_email, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		a.ID, a.Name, a.NotificationEmail, ms(now), ms(now)); err != nil {
		return Account{}, fmt.Errorf("insert account: %w", err)
	}
	owner := NewID()
	if _, err := tx.Exec(ctx, `INSERT INTO owners (id, account_id, email, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		owner, a.ID, b.OwnerEmail, b.PasswordHash, string(RoleOwner), ms(now)); err != nil {
		return Account{}, fmt.Errorf("insert owner: %w", err)
	}
	if _, err := tx.insertAPIToken(ctx, a.ID, NewAPIToken{Name: FirstTokenName, Scope: ScopeWrite, Hash: b.TokenHash, CreatedBy: owner}); err != nil {
		return Account{}, err
	}
	return a, nil
}

// CreateAccount creates an account with its owner and API token in its own
// transaction.
func (s *Store) CreateAccount(ctx context.Context, b Bootstrap) (Account, error) {
	var a Account
	err := s.InTx(ctx, func(tx *Tx) (err error) {
		a, err = tx.CreateAccount(ctx, b)
		return err
	})
	return a, err
}

// Account returns one account.
func (s *Store) Account(ctx context.Context, id string) (Account, error) {
	return s.scanAccount(s.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = ?`, id))
}

// AccountPatch holds the fields to change; nil leaves a field as it is.
type AccountPatch struct {
	Name              *string
	NotificationEmail *string
	// ExpiringSoonLead, in seconds (MinExpiringSoonLead to
	// MaxExpiringSoonLead, checked above the store); changing it re-plans
	// the account's licenses in the same transaction.
	ExpiringSoonLead *int64
}

// LimitsPatch holds the limits to change: a field set changes its limit,
// to Value, or back to the default when Value is nil.
type LimitsPatch struct {
	Webhooks             *LimitChange
	APIRequestsPerSecond *LimitChange
}

// LimitChange is one limit's new value; a nil Value is the default.
type LimitChange struct{ Value *int64 }

// SetAccountLimits changes an account's limits and returns the account. A
// missing account is ErrNotFound.
func (s *Store) SetAccountLimits(ctx context.Context, id string, p LimitsPatch) (Account, error) {
	err := s.InTx(ctx, func(tx *Tx) error {
		set, args := []string{"updated_at = ?"}, []any{ms(s.now())}
		for _, c := range []struct {
			col string
			ch  *LimitChange
		}{{"max_webhooks", p.Webhooks}, {"api_requests_per_second", p.APIRequestsPerSecond}} {
			if c.ch != nil {
				set, args = append(set, c.col+" = ?"), append(args, c.ch.Value)
			}
		}
		res, err := tx.Exec(ctx, `UPDATE accounts SET `+strings.Join(set, ", ")+` WHERE id = ?`, append(args, id)...)
		if err != nil {
			return fmt.Errorf("set account limits: %w", err)
		}
		return MustAffect(res)
	})
	if err != nil {
		return Account{}, err
	}
	return s.Account(ctx, id)
}

// UpdateAccount changes an account.
func (s *Store) UpdateAccount(ctx context.Context, id string, p AccountPatch) (Account, error) {
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE accounts SET name = COALESCE(?, name), notification_email = COALESCE(?, notification_email),
expiring_soon_lead_seconds = COALESCE(?, expiring_soon_lead_seconds), updated_at = ? WHERE id = ?`,
			p.Name, p.NotificationEmail, p.ExpiringSoonLead, ms(s.now()), id)
		if err != nil {
			return fmt.Errorf("update account: %w", err)
		}
		if err := MustAffect(res); err != nil || p.ExpiringSoonLead == nil {
			return err
		}
		return tx.replanAccount(ctx, id)
	})
	if err != nil {
		return Account{}, err
	}
	if p.ExpiringSoonLead != nil {
		s.ExpiriesChanged()
	}
	return s.Account(ctx, id)
}

func (s *Store) scanAccount(row *sql.Row) (Account, error) {
	var a Account
	fields, done := accountFields(&a)
	err := row.Scan(fields...)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, ErrNotFound
	}
	if err != nil {
		return Account{}, fmt.Errorf("read account: %w", err)
	}
	done()
	return a, nil
}

// Person is someone who signs in to an account's portal, an owner or a
// member by Role: the account's people, never the licensing API's users
// (licensing.User), who are the account's customers. The table keeps the
// name owners (decision 0003).
type Person struct {
	ID           string
	AccountID    string
	Email        string
	PasswordHash string
	Role         Role
	CreatedAt    time.Time
}

// PersonByEmail finds a person for sign-in.
func (s *Store) PersonByEmail(ctx context.Context, email string) (Person, error) {
	o, err := scanPerson(s.QueryRow(ctx, `SELECT `+ownerColumns+` FROM owners WHERE email = ?`, email))
	if err != nil {
		return Person{}, notFound(err, "read owner")
	}
	return o, nil
}

// MustAffect turns "no row changed" into ErrNotFound.
func MustAffect(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
