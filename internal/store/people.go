package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Role is what a user may do in their account's portal: every user uses it,
// only owners manage the account's people.
type Role string

// Roles.
const (
	RoleOwner  Role = "owner"
	RoleMember Role = "member"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleMember }

// ErrLastOwner refuses a change that would leave an account with no owner,
// and so nobody who can manage its people.
var ErrLastOwner = errors.New("an account keeps at least one owner")

const ownerColumns = `id, account_id, email, password_hash, role, created_at`

func scanPerson(row scanner) (Person, error) {
	var o Person
	var role string
	var c int64
	if err := row.Scan(&o.ID, &o.AccountID, &o.Email, &o.PasswordHash, &role, &c); err != nil {
		return Person{}, err
	}
	o.Role, o.CreatedAt = Role(role), fromMS(c)
	return o, nil
}

// People lists an account's people, oldest first (the first owner first). An
// account has a handful, so the list is not paged.
func (s *Store) People(ctx context.Context, accountID string) ([]Person, error) {
	rows, err := s.Query(ctx, `SELECT `+ownerColumns+` FROM owners WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	var list []Person
	for rows.Next() {
		o, err := scanPerson(rows)
		if err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		list = append(list, o)
	}
	return list, rows.Err()
}

// Person returns one of an account's people.
func (s *Store) Person(ctx context.Context, accountID, id string) (Person, error) {
	o, err := scanPerson(s.QueryRow(ctx, `SELECT `+ownerColumns+` FROM owners WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return Person{}, notFound(err, "read user")
	}
	return o, nil
}

// ChangePassword sets a user's password hash and ends every session of that
// user but keep (the one that asked, "" for none): whoever else held the old
// password is signed out everywhere.
func (s *Store) ChangePassword(ctx context.Context, accountID, userID, hash, keep string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE owners SET password_hash = ? WHERE account_id = ? AND id = ?`, hash, accountID, userID)
		if err != nil {
			return fmt.Errorf("change password: %w", err)
		}
		if err := MustAffect(res); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM portal_sessions WHERE owner_id = ? AND id_hash <> ?`, userID, keep); err != nil {
			return fmt.Errorf("change password: end sessions: %w", err)
		}
		return nil
	})
}

// ResetPassword sets the password hash of the user signing in as email, in
// whichever account, and ends all their sessions. An unknown email is
// ErrNotFound.
func (s *Store) ResetPassword(ctx context.Context, email, hash string) (Person, error) {
	o, err := s.PersonByEmail(ctx, email)
	if err != nil {
		return Person{}, err
	}
	return o, s.ChangePassword(ctx, o.AccountID, o.ID, hash, "")
}

// lockAccount serialises changes to an account's people, so two owners
// demoting each other at once cannot leave it with none.
func (tx *Tx) lockAccount(ctx context.Context, accountID string) error {
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM accounts WHERE id = ?`+tx.ForUpdate(), accountID).Scan(&id)
	return notFound(err, "lock account")
}

// keepsAnOwner returns ErrLastOwner unless the account has an owner other
// than userID.
func (tx *Tx) keepsAnOwner(ctx context.Context, accountID, userID string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM owners WHERE account_id = ? AND role = 'owner' AND id <> ?`, accountID, userID).Scan(&n); err != nil {
		return fmt.Errorf("count owners: %w", err)
	}
	if n == 0 {
		return ErrLastOwner
	}
	return nil
}

// SetRole changes a user's role; making the last owner a member is
// ErrLastOwner.
func (s *Store) SetRole(ctx context.Context, accountID, userID string, role Role) error {
	if !role.Valid() {
		return fmt.Errorf("set role: role %q", role)
	}
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.lockAccount(ctx, accountID); err != nil {
			return err
		}
		if role == RoleMember {
			if err := tx.keepsAnOwner(ctx, accountID, userID); err != nil {
				return err
			}
		}
		res, err := tx.Exec(ctx, `UPDATE owners SET role = ? WHERE account_id = ? AND id = ?`, string(role), accountID, userID)
		if err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		return MustAffect(res)
	})
}

// RemovePerson removes a person, their sessions and the API tokens they made
// (a token made through the API is its maker's maker's), and reports how
// many tokens it revoked; removing the last owner is ErrLastOwner. A
// person who leaves keeps no way in: every process refuses the tokens
// from the next request on, as after RevokeAPIToken.
func (s *Store) RemovePerson(ctx context.Context, accountID, userID string) (revoked int, err error) {
	var ids []string
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.lockAccount(ctx, accountID); err != nil {
			return err
		}
		if err := tx.keepsAnOwner(ctx, accountID, userID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM api_tokens WHERE account_id = ? AND created_by = ? RETURNING id`, accountID, userID)
		if err != nil {
			return fmt.Errorf("revoke the user's api tokens: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("revoke the user's api tokens: %w", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("revoke the user's api tokens: %w", err)
		}
		res, err := tx.Exec(ctx, `DELETE FROM owners WHERE account_id = ? AND id = ?`, accountID, userID)
		if err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		return MustAffect(res)
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		s.keptTokens.forgetID(id)
	}
	return len(ids), nil
}

// LinkKind says what a sign-in link does.
type LinkKind string

// Link kinds: an operator's portal link signs in as the account's first
// owner; an invitation lets the invited person set a password.
const (
	LinkPortal     LinkKind = "portal"
	LinkInvitation LinkKind = "invitation"
)

// Link is a single-use sign-in link. The token is never stored, only its
// SHA-256.
type Link struct {
	ID        string
	AccountID string
	Kind      LinkKind
	Email     string // invitation
	Role      Role   // invitation
	CreatedAt time.Time
	ExpiresAt time.Time
}

// NewLink is a link to create.
type NewLink struct {
	Kind      LinkKind
	Email     string // invitation
	Role      Role   // invitation
	Hash      string // the SHA-256 of the token, which only the caller sees
	ExpiresAt time.Time
}

const linkColumns = `id, account_id, kind, email, role, created_at, expires_at`

func scanLink(row scanner) (Link, error) {
	var l Link
	var email, role sql.NullString
	var c, e int64
	if err := row.Scan(&l.ID, &l.AccountID, &l.Kind, &email, &role, &c, &e); err != nil {
		return Link{}, err
	}
	l.Email, l.Role, l.CreatedAt, l.ExpiresAt = email.String, Role(role.String), fromMS(c), fromMS(e)
	return l, nil
}

// CreateLink stores a sign-in link for an account, removing expired ones.
// An invitation to an address that already signs in to herald is
// ErrConflict (an address is one user, in one account); a second
// invitation to the same address replaces the first.
func (s *Store) CreateLink(ctx context.Context, accountID string, n NewLink) (Link, error) {
	now := s.now()
	l := Link{ID: NewID(), AccountID: accountID, Kind: n.Kind, Email: n.Email, Role: n.Role,
		CreatedAt: fromMS(ms(now)), ExpiresAt: fromMS(ms(n.ExpiresAt))}
	var email, role any
	if n.Kind == LinkInvitation {
		if !n.Role.Valid() || n.Email == "" {
			return Link{}, fmt.Errorf("create invitation: role %q, email %q", n.Role, n.Email)
		}
		email, role = n.Email, string(n.Role)
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.lockAccount(ctx, accountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM signin_links WHERE expires_at <= ?`, ms(now)); err != nil {
			return fmt.Errorf("remove expired links: %w", err)
		}
		if n.Kind == LinkInvitation {
			var taken int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM owners WHERE email = ?`, n.Email).Scan(&taken); err != nil {
				return fmt.Errorf("create invitation: %w", err)
			}
			if taken > 0 {
				return fmt.Errorf("create invitation: %s already signs in: %w", n.Email, ErrConflict)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM signin_links WHERE account_id = ? AND kind = 'invitation' AND email = ?`, accountID, n.Email); err != nil {
				return fmt.Errorf("create invitation: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO signin_links (id, account_id, token_hash, kind, email, role, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			l.ID, accountID, n.Hash, string(n.Kind), email, role, ms(now), ms(n.ExpiresAt))
		if err != nil {
			return fmt.Errorf("create link: %w", err)
		}
		return nil
	})
	return l, err
}

// Invitations lists an account's unexpired invitations, newest first.
func (s *Store) Invitations(ctx context.Context, accountID string) ([]Link, error) {
	rows, err := s.Query(ctx, `SELECT `+linkColumns+` FROM signin_links WHERE account_id = ? AND kind = 'invitation' AND expires_at > ? ORDER BY id DESC`,
		accountID, ms(s.now()))
	if err != nil {
		return nil, fmt.Errorf("list invitations: %w", err)
	}
	defer rows.Close()
	var list []Link
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, fmt.Errorf("list invitations: %w", err)
		}
		list = append(list, l)
	}
	return list, rows.Err()
}

// RevokeInvitation deletes one of an account's invitations.
func (s *Store) RevokeInvitation(ctx context.Context, accountID, id string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM signin_links WHERE account_id = ? AND id = ? AND kind = 'invitation'`, accountID, id)
		if err != nil {
			return fmt.Errorf("revoke invitation: %w", err)
		}
		return MustAffect(res)
	})
}

// LinkByHash returns the unexpired link of kind whose token hashes to hash,
// without using it (the invitation page shows whom it invites).
func (s *Store) LinkByHash(ctx context.Context, kind LinkKind, hash string) (Link, error) {
	l, err := scanLink(s.QueryRow(ctx, `SELECT `+linkColumns+` FROM signin_links WHERE token_hash = ? AND kind = ? AND expires_at > ?`,
		hash, string(kind), ms(s.now())))
	if err != nil {
		return Link{}, notFound(err, "read link")
	}
	return l, nil
}

// takeLink deletes and returns the unexpired link of kind whose token
// hashes to hash: of two requests using one link, one gets it.
func (tx *Tx) takeLink(ctx context.Context, kind LinkKind, hash string) (Link, error) {
	l, err := scanLink(tx.QueryRow(ctx, `DELETE FROM signin_links WHERE token_hash = ? AND kind = ? AND expires_at > ? RETURNING `+linkColumns,
		hash, string(kind), ms(tx.Now())))
	if err != nil {
		return Link{}, notFound(err, "use link")
	}
	return l, nil
}

// UsePortalLink uses up a portal link and returns the user it signs in as:
// the account's first owner. An unknown, used or expired link is
// ErrNotFound.
func (s *Store) UsePortalLink(ctx context.Context, hash string) (Person, error) {
	var o Person
	err := s.InTx(ctx, func(tx *Tx) error {
		l, err := tx.takeLink(ctx, LinkPortal, hash)
		if err != nil {
			return err
		}
		o, err = scanPerson(tx.QueryRow(ctx, `SELECT `+ownerColumns+` FROM owners WHERE account_id = ? AND role = 'owner' ORDER BY created_at, id LIMIT 1`, l.AccountID))
		return notFound(err, "use portal link")
	})
	return o, err
}

// AcceptInvitation uses up an invitation and creates its user with the
// given password hash. An unknown, used or expired invitation is
// ErrNotFound; an address that signs in meanwhile, ErrConflict.
func (s *Store) AcceptInvitation(ctx context.Context, hash, passwordHash string) (Person, error) {
	var o Person
	err := s.InTx(ctx, func(tx *Tx) error {
		l, err := tx.takeLink(ctx, LinkInvitation, hash)
		if err != nil {
			return err
		}
		now := tx.Now()
		o = Person{ID: NewID(), AccountID: l.AccountID, Email: l.Email, PasswordHash: passwordHash, Role: l.Role, CreatedAt: fromMS(ms(now))}
		_, err = tx.Exec(ctx, `INSERT INTO owners (id, account_id, email, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			o.ID, o.AccountID, o.Email, o.PasswordHash, string(o.Role), ms(now))
		if IsUniqueViolation(err) {
			return fmt.Errorf("accept invitation: %s already signs in: %w", l.Email, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("accept invitation: %w", err)
		}
		return nil
	})
	return o, err
}
