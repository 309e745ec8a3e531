package licensing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// User is an end user licenses can be assigned to, as the API answers it
// and user events carry it.
type User struct {
	ID        string  `json:"id"`
	Email     string  `json:"email"`
	Name      *string `json:"name"`
	CreatedAt Time    `json:"createdAt"`
	UpdatedAt Time    `json:"updatedAt"`
}

// UserInput creates or changes a user.
type UserInput struct {
	Email Optional[string] `json:"email"`
	Name  Optional[string] `json:"name"`
	// TestData, at creation only, marks a user whose deletion fires no
	// event (herald trigger's, cleaned up after it).
	TestData Optional[bool] `json:"testData"`
}

const userColumns = `id, email, name, created_at, updated_at`

func scanUser(sc scanner) (User, error) {
	var u User
	var name sql.NullString
	var c, up int64
	if err := sc.Scan(&u.ID, &u.Email, &name, &c, &up); err != nil {
		return User{}, err
	}
	if name.Valid {
		u.Name = &name.String
	}
	u.CreatedAt, u.UpdatedAt = fromMS(c), fromMS(up)
	return u, nil
}

func getUser(ctx context.Context, q querier, accountID, id, lock string) (User, error) {
	u, err := scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, notFound("user")
	}
	if err != nil {
		return User{}, fmt.Errorf("read user: %w", err)
	}
	return u, nil
}

// emailKey is what makes two emails the same user: compared
// case-insensitively, the same way on both engines.
func emailKey(email string) string { return strings.ToLower(email) }

func (in *UserInput) validate(create bool) error {
	if !create && !in.Email.Set && !in.Name.Set {
		return invalid("body", "send at least one of email, name")
	}
	var v InvalidError
	if v.present("email", in.Email.Set, in.Email.Value != nil, create) {
		*in.Email.Value = strings.TrimSpace(*in.Email.Value)
		v.email("email", *in.Email.Value)
	}
	if in.Name.Value != nil {
		*in.Name.Value = strings.TrimSpace(*in.Name.Value)
		v.text("name", *in.Name.Value, 1, maxName)
	}
	if in.TestData.Set && (!create || in.TestData.Value == nil) {
		v.add("testData", "is set at creation only, to true or false")
	}
	return v.err()
}

// checkEmail answers a conflict when another user of the account has email.
func checkEmail(ctx context.Context, tx *store.Tx, accountID, email, self string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE account_id = ? AND email_key = ? AND id <> ?`,
		accountID, emailKey(email), self).Scan(&n); err != nil {
		return fmt.Errorf("check email: %w", err)
	}
	if n > 0 {
		return errEmailTaken
	}
	return nil
}

var errEmailTaken = ConflictError{"a user with this email already exists"}

// CreateUser creates a user and fires user.created. Emails are unique
// within the account, compared case-insensitively.
func (s *Service) CreateUser(ctx context.Context, accountID string, in UserInput) (User, error) {
	if err := in.validate(true); err != nil {
		return User{}, err
	}
	var u User
	err := s.change(ctx, accountID, func(tx *store.Tx) error {
		if err := checkEmail(ctx, tx, accountID, *in.Email.Value, ""); err != nil {
			return err
		}
		now := fromMS(store.MS(tx.Now()))
		u = User{ID: store.NewID(), Email: *in.Email.Value, Name: in.Name.Value, CreatedAt: now, UpdatedAt: now}
		testData := in.TestData.Value != nil && *in.TestData.Value
		if _, err := tx.Exec(ctx, `INSERT INTO users (id, account_id, email, email_key, name, created_at, updated_at, test_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			u.ID, accountID, u.Email, emailKey(u.Email), u.Name, store.MS(now.Time), store.MS(now.Time), testData); err != nil {
			return uniqueOr(fmt.Errorf("insert user: %w", err), errEmailTaken)
		}
		_, err := tx.Fire(ctx, accountID, event.UserCreated, u)
		return err
	})
	return u, err
}

// User returns one user.
func (s *Service) User(ctx context.Context, accountID, id string) (User, error) {
	return getUser(ctx, s.store, accountID, id, "")
}

// Users lists an account's users, newest first.
func (s *Service) Users(ctx context.Context, accountID string, p store.Page) ([]User, string, error) {
	out, next, err := list(ctx, s, `SELECT `+userColumns+` FROM users WHERE account_id = ?`, []any{accountID}, p,
		scanUser, func(u User) string { return u.ID })
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	return out, next, nil
}

// UpdateUser changes a user's email or name (null clears the name) and
// fires user.updated.
func (s *Service) UpdateUser(ctx context.Context, accountID, id string, in UserInput) (User, error) {
	var u User
	err := s.change(ctx, accountID, func(tx *store.Tx) (err error) {
		if u, err = getUser(ctx, tx, accountID, id, tx.ForUpdate()); err != nil {
			return err
		}
		if err := in.validate(false); err != nil {
			return err
		}
		if in.Email.Set {
			if err := checkEmail(ctx, tx, accountID, *in.Email.Value, id); err != nil {
				return err
			}
			u.Email = *in.Email.Value
		}
		if in.Name.Set {
			u.Name = in.Name.Value
		}
		u.UpdatedAt = fromMS(store.MS(tx.Now()))
		if _, err := tx.Exec(ctx, `UPDATE users SET email = ?, email_key = ?, name = ?, updated_at = ? WHERE account_id = ? AND id = ?`,
			u.Email, emailKey(u.Email), u.Name, store.MS(u.UpdatedAt.Time), accountID, id); err != nil {
			return uniqueOr(fmt.Errorf("update user: %w", err), errEmailTaken)
		}
		_, err = tx.Fire(ctx, accountID, event.UserUpdated, u)
		return err
	})
	return u, err
}

// DeleteUser deletes a user and fires user.deleted with the user as it
// was. Users and licenses are siblings: the user's licenses stay, with
// userId cleared (and updatedAt set), and fire nothing: user.deleted is the
// one event of the change, and a receiver that tracks assignments learns of
// it there.
func (s *Service) DeleteUser(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		u, err := getUser(ctx, tx, accountID, id, tx.ForUpdate())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE licenses SET user_id = NULL, updated_at = ? WHERE account_id = ? AND user_id = ?`,
			store.MS(tx.Now()), accountID, id); err != nil {
			return fmt.Errorf("unassign licenses: %w", err)
		}
		var testData bool
		if err := tx.QueryRow(ctx, `SELECT test_data FROM users WHERE account_id = ? AND id = ?`, accountID, id).Scan(&testData); err != nil {
			return fmt.Errorf("read user: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM users WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete user: %w", err)
		}
		if testData {
			return nil
		}
		_, err = tx.Fire(ctx, accountID, event.UserDeleted, u)
		return err
	})
}
