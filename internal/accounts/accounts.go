// Package accounts creates accounts: an account with its owner (who signs
// in to the portal with a password) and its first API token, the
// credentials generated unless given, and the portal's single-use sign-in
// links for an account. A first start's bootstrap (server), the operator
// API (api) and `herald accounts` all create accounts here, so an account is
// made one way whichever door it comes through. The store persists what it
// is handed; the secrets are made and hashed here (with auth).
package accounts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
)

// New is an account to create. Its fields are checked by the caller (the
// API's problem, or a flag's message, names the field as its caller spells
// it).
type New struct {
	Name       string
	OwnerEmail string
	// NotificationEmail is where suspension emails go; "" means OwnerEmail.
	NotificationEmail string
	// Password is the owner's portal password; "" generates one.
	Password string
	// PasswordHash, when set with Password, is that password's hash made
	// ahead of time (tests starting many heralds skip argon2id's cost); it
	// is not checked against Password.
	PasswordHash string
	// APIToken is the account's first API token (a write token); ""
	// generates one.
	APIToken string
}

// Created is a new account with its owner's password and its first API
// token, which exist in clear only here: the store keeps their hashes.
type Created struct {
	Account       store.Account
	APIToken      string
	OwnerPassword string
	// GeneratedPassword and GeneratedToken say which of the two were
	// generated rather than given, and so must be shown once.
	GeneratedPassword bool
	GeneratedToken    bool
}

// Create creates an account. An OwnerEmail that already signs in to herald
// is store.ErrConflict: an address belongs to one account.
func Create(ctx context.Context, st *store.Store, n New) (Created, error) {
	if _, err := st.PersonByEmail(ctx, n.OwnerEmail); err == nil {
		return Created{}, store.ErrConflict
	} else if !errors.Is(err, store.ErrNotFound) {
		return Created{}, err
	}
	c, b, err := prepare(n)
	if err != nil {
		return Created{}, err
	}
	c.Account, err = st.CreateAccount(ctx, b)
	if store.IsUniqueViolation(err) {
		return Created{}, store.ErrConflict // the same address, created at the same moment
	}
	if err != nil {
		return Created{}, err
	}
	return c, nil
}

// CreateFirst creates the account on a database that has none yet, and
// reports whether it did: several heralds starting at once on an empty
// database create one between them (store.BootstrapIfEmpty).
func CreateFirst(ctx context.Context, st *store.Store, n New) (c Created, created bool, err error) {
	c, b, err := prepare(n)
	if err != nil {
		return Created{}, false, err
	}
	c.Account, created, err = st.BootstrapIfEmpty(ctx, b)
	if err != nil || !created {
		return Created{}, false, err
	}
	return c, true, nil
}

// prepare makes the credentials n leaves out, and their hashes.
func prepare(n New) (Created, store.Bootstrap, error) {
	c := Created{OwnerPassword: n.Password, APIToken: n.APIToken}
	if c.OwnerPassword == "" {
		c.OwnerPassword, c.GeneratedPassword = auth.NewPassword(), true
	}
	if c.APIToken == "" {
		c.APIToken, c.GeneratedToken = auth.NewAPIToken(), true
	}
	hash := n.PasswordHash
	if hash == "" || c.GeneratedPassword {
		var err error
		if hash, err = auth.HashPassword(c.OwnerPassword); err != nil {
			return Created{}, store.Bootstrap{}, err
		}
	}
	return c, store.Bootstrap{AccountName: n.Name, OwnerEmail: n.OwnerEmail, NotificationEmail: n.NotificationEmail,
		PasswordHash: hash, TokenHash: auth.HashToken(c.APIToken)}, nil
}

// Portal link lifetimes: a link is for a click from the platform's
// dashboard, seconds after it is made, so minutes are plenty and an hour
// is the most an operator may ask.
const (
	DefaultPortalLinkTTL = 5 * time.Minute
	MaxPortalLinkTTL     = time.Hour
	MinPortalLinkTTL     = 10 * time.Second
)

// PortalLink is a single-use link that signs into an account's portal.
type PortalLink struct {
	URL       string
	ExpiresAt time.Time
}

// PortalLinkPath is where the portal takes a portal link.
const PortalLinkPath = "/signin/link"

// NewPortalLink makes a portal link for an account, valid for ttl, under
// base (the portal's address, no trailing slash). A missing account is
// store.ErrNotFound.
func NewPortalLink(ctx context.Context, st *store.Store, accountID string, ttl time.Duration, base string) (PortalLink, error) {
	token := auth.NewLinkToken()
	l, err := st.CreateLink(ctx, accountID, store.NewLink{Kind: store.LinkPortal, Hash: auth.HashToken(token), ExpiresAt: st.Now().Add(ttl)})
	if err != nil {
		return PortalLink{}, err
	}
	return PortalLink{URL: strings.TrimRight(base, "/") + PortalLinkPath + "?token=" + token, ExpiresAt: l.ExpiresAt}, nil
}
