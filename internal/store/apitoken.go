package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Scope is what an API token may do.
type Scope string

// Scopes: a write token may make every call, a read token only GETs.
const (
	ScopeWrite Scope = "write"
	ScopeRead  Scope = "read"
)

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return s == ScopeWrite || s == ScopeRead }

// FirstTokenName names the token an account is created with.
const FirstTokenName = "First token"

// LastUsedInterval is how stale a token's LastUsedAt may be. Recording every
// use would make every API request, reads included, a write transaction
// (on SQLite, a turn of the one writer); once per token per interval costs
// one conditional UPDATE a minute per token in use, across every process.
const LastUsedInterval = time.Minute

// APIToken is one of an account's API tokens. The token itself is never
// stored, only its SHA-256 (auth.HashToken).
type APIToken struct {
	ID         string
	AccountID  string
	Name       string
	Scope      Scope
	CreatedAt  time.Time
	ExpiresAt  *time.Time // nil: never
	LastUsedAt *time.Time // nil: never used; otherwise at most LastUsedInterval stale
	// CreatedBy is the person who made the token ("": not recorded, a
	// token made before herald recorded it); CreatedByEmail their address,
	// read by APITokens only.
	CreatedBy, CreatedByEmail string
}

// NewAPIToken is a token to create.
type NewAPIToken struct {
	Name      string
	Scope     Scope
	Hash      string     // auth.HashToken of the secret, which only the caller sees
	ExpiresAt *time.Time // nil: never
	// CreatedBy is the person who made it: the one signed in to the portal,
	// or the maker of the API token that made it ("": not known). Removing
	// that person revokes it.
	CreatedBy string
}

const apiTokenColumns = `id, account_id, name, scope, created_at, expires_at, last_used_at, created_by`

// insertAPIToken adds a token to an account in tx.
func (tx *Tx) insertAPIToken(ctx context.Context, accountID string, n NewAPIToken) (APIToken, error) {
	now := tx.Now()
	t := APIToken{ID: NewID(), AccountID: accountID, Name: n.Name, Scope: n.Scope, CreatedAt: fromMS(ms(now)), CreatedBy: n.CreatedBy}
	var exp sql.NullInt64
	if n.ExpiresAt != nil {
		exp = sql.NullInt64{Int64: ms(*n.ExpiresAt), Valid: true}
		t.ExpiresAt = optTime(exp)
	}
	var by sql.NullString
	if n.CreatedBy != "" {
		by = sql.NullString{String: n.CreatedBy, Valid: true}
	}
	q, args := `INSERT INTO api_tokens (id, account_id, name, scope, token_hash, created_at, expires_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{t.ID, accountID, n.Name, string(n.Scope), n.Hash, ms(now), exp, by}
	if !tx.s.has(95) { // an older schema, which a migration test writes
		q, args = `INSERT INTO api_tokens (id, account_id, name, scope, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, args[:7]
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return APIToken{}, fmt.Errorf("insert api token: %w", err)
	}
	return t, nil
}

// CreateAPIToken adds a token to an account. A hash already taken (which a
// random 256-bit token never meets) is ErrConflict.
func (s *Store) CreateAPIToken(ctx context.Context, accountID string, n NewAPIToken) (APIToken, error) {
	if !n.Scope.Valid() {
		return APIToken{}, fmt.Errorf("create api token: scope %q", n.Scope)
	}
	var t APIToken
	err := s.InTx(ctx, func(tx *Tx) (err error) {
		if t, err = tx.insertAPIToken(ctx, accountID, n); err != nil || n.CreatedBy == "" {
			return err
		}
		return tx.QueryRow(ctx, `SELECT email FROM owners WHERE id = ? AND account_id = ?`, n.CreatedBy, accountID).Scan(&t.CreatedByEmail)
	})
	if IsUniqueViolation(err) {
		return APIToken{}, fmt.Errorf("create api token: %w", ErrConflict)
	}
	return t, err
}

// APITokens lists an account's tokens, expired ones included, newest first.
func (s *Store) APITokens(ctx context.Context, accountID string, p Page) (list []APIToken, next string, err error) {
	q, args := p.apply(`SELECT `+apiTokenColumns+`, (SELECT email FROM owners o WHERE o.id = api_tokens.created_by)
FROM api_tokens WHERE account_id = ?`, []any{accountID})
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list api tokens: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var email sql.NullString
		t, err := scanAPIToken(prefixScanner{row: rows, suffix: []any{&email}})
		if err != nil {
			return nil, "", fmt.Errorf("list api tokens: %w", err)
		}
		t.CreatedByEmail = email.String
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list api tokens: %w", err)
	}
	list, next = cut(list, p.Limit, func(t APIToken) string { return t.ID })
	return list, next, nil
}

// RevokeAPIToken deletes one of an account's tokens; the next request
// carrying it, to any process, is refused: a process reads a token at
// every request, or checks it in the statement that does the request's work
// (KeptToken). Another account's token, or one already revoked, is
// ErrNotFound.
func (s *Store) RevokeAPIToken(ctx context.Context, accountID, id string) error {
	defer s.keptTokens.forgetID(id)
	return s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE account_id = ? AND id = ?`, accountID, id)
		if err != nil {
			return fmt.Errorf("revoke api token: %w", err)
		}
		return MustAffect(res)
	})
}

// APITokenByHash returns the token whose hash is hash, with its account,
// unless it is unknown, revoked or expired by the store's clock: then
// ErrNotFound. It only reads; Authenticate also records the use.
func (s *Store) APITokenByHash(ctx context.Context, hash string) (Account, APIToken, error) {
	var a Account
	fields, done := accountFields(&a)
	row := s.QueryRow(ctx, `SELECT a.id, a.name, a.notification_email, a.created_at, a.updated_at, a.max_webhooks, a.api_requests_per_second,
a.expiring_soon_lead_seconds,
t.id, t.account_id, t.name, t.scope, t.created_at, t.expires_at, t.last_used_at, t.created_by
FROM api_tokens t JOIN accounts a ON a.id = t.account_id
WHERE t.token_hash = ? AND (t.expires_at IS NULL OR t.expires_at > ?)`, hash, ms(s.now()))
	t, err := scanAPIToken(prefixScanner{row: row, prefix: fields})
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, APIToken{}, ErrNotFound
	}
	if err != nil {
		return Account{}, APIToken{}, fmt.Errorf("read api token: %w", err)
	}
	done()
	return a, t, nil
}

// Authenticate is APITokenByHash for a request the token is making: it also
// records the use, when the recorded one is LastUsedInterval old or more.
// The UPDATE is conditional, so processes that read the same stale time
// write it once between them. Failing to record a use does not refuse the
// request: it is logged, and the next request tries again. On PostgreSQL
// it keeps the token it found for KeptToken.
func (s *Store) Authenticate(ctx context.Context, hash string) (Account, APIToken, error) {
	now := s.now()
	a, t, err := s.APITokenByHash(ctx, hash)
	if err != nil {
		s.keptTokens.forget(hash)
		return a, t, err
	}
	defer func() {
		if s.eng.name() == "postgres" {
			s.keptTokens.put(hash, keptToken{account: a, token: t, readAt: now})
		}
	}()
	if t.LastUsedAt != nil && now.Sub(*t.LastUsedAt) < LastUsedInterval {
		return a, t, nil
	}
	err = s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
			ms(now), t.ID, ms(now.Add(-LastUsedInterval)))
		return err
	})
	if err != nil {
		if !errors.Is(err, ErrStorageFull) { // said once per FullLogEvery already
			s.log.Warn("record api token use", "token_id", t.ID, "err", err)
		}
		return a, t, nil
	}
	used := fromMS(ms(now))
	t.LastUsedAt = &used
	return a, t, nil
}

// AccountByTokenHash returns the account a valid (unrevoked, unexpired) API
// token belongs to, without recording a use.
func (s *Store) AccountByTokenHash(ctx context.Context, hash string) (Account, error) {
	a, _, err := s.APITokenByHash(ctx, hash)
	return a, err
}

type scanner interface{ Scan(dest ...any) error }

// prefixScanner scans columns before a token's own into prefix, and those
// after them into suffix.
type prefixScanner struct {
	row            scanner
	prefix, suffix []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.row.Scan(append(append(p.prefix, dest...), p.suffix...)...)
}

func scanAPIToken(row scanner) (APIToken, error) {
	var t APIToken
	var scope string
	var created int64
	var exp, used sql.NullInt64
	var by sql.NullString
	if err := row.Scan(&t.ID, &t.AccountID, &t.Name, &scope, &created, &exp, &used, &by); err != nil {
		return APIToken{}, err
	}
	t.Scope, t.CreatedAt, t.ExpiresAt, t.LastUsedAt, t.CreatedBy = Scope(scope), fromMS(created), optTime(exp), optTime(used), by.String
	return t, nil
}
