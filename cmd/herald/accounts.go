package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/internal/accounts"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/server"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

const accountsUsage = `Run against the database directly (--database, $HERALD_DATABASE_URL; on SQLite
with herald stopped, as SQLite serves one process):
  herald accounts create --name N --owner-email E [--notification-email E]
  herald accounts list
  herald accounts delete ID
  herald accounts link ID --public-url URL [--ttl 5m]
  herald accounts limits ID [--webhooks N|default] [--api-rps N|default]
  herald accounts reset-password --email E
`

// accountsCmd is `herald accounts`: what the operator API does, and a
// forgotten password's reset, for whoever holds the database. Each command
// reads its flags and says what it will do; then the database is opened and
// it is done.
func accountsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"herald accounts", errors.New("name a command: create, list, delete, link, limits or reset-password")}
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, accountsUsage)
		return nil
	}
	command, ok := accountsCommands[args[0]]
	if !ok {
		return usageError{"herald accounts", fmt.Errorf("unknown command %q; want create, list, delete, link, limits or reset-password", args[0])}
	}
	e := &envFlags{fs: flag.NewFlagSet("herald accounts "+args[0], flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	sf := addStoreFlags(e)
	asJSON := e.fs.Bool("json", false, "print the answer as JSON")
	run, err := command(ctx, accountsArgs{e: e, args: args[1:], stdout: stdout, asJSON: asJSON})
	if err != nil {
		return err
	}
	st, err := openExisting(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(st)
}

// accountsArgs is what each `herald accounts` command reads: its flag set
// (the database's flags and --json already on it), its arguments, and where
// it prints.
type accountsArgs struct {
	e      *envFlags
	args   []string
	stdout io.Writer
	asJSON *bool
}

// accountsCommands are the commands of `herald accounts`: each reads its
// flags and returns what to do with the database.
var accountsCommands = map[string]func(context.Context, accountsArgs) (func(*store.Store) error, error){
	"create":         accountsCreate,
	"list":           accountsList,
	"delete":         accountsDelete,
	"link":           accountsLink,
	"limits":         accountsLimits,
	"reset-password": accountsResetPassword,
}

// accountsCreate is `herald accounts create`: it creates an account,
// printing its owner's password and API token once.
func accountsCreate(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	name := in.e.fs.String("name", "", "the account's name (required)")
	owner := in.e.fs.String("owner-email", "", "the address its owner signs in with (required)")
	notify := in.e.fs.String("notification-email", "", "where suspension emails go (default: the owner's address)")
	if _, err := parseArgs(in.e, in.args, 0, ""); err != nil {
		return nil, err
	}
	var ve validator.Errors
	validator.CheckAccountName(&ve, "--name", name)
	validator.CheckEmail(&ve, "--owner-email", owner)
	if *notify != "" {
		validator.CheckEmail(&ve, "--notification-email", notify)
	}
	if err := flagErrors(ve); err != nil {
		return nil, usageError{in.e.fs.Name(), err}
	}
	return func(st *store.Store) error {
		c, err := accounts.Create(ctx, st, accounts.New{Name: *name, OwnerEmail: *owner, NotificationEmail: *notify})
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("--owner-email %s already signs in to herald; an address belongs to one account", *owner)
		}
		if err != nil {
			return err
		}
		if *in.asJSON {
			return printJSON(in.stdout, map[string]any{"account": accountOut(c.Account), "apiToken": c.APIToken, "ownerPassword": c.OwnerPassword})
		}
		fmt.Fprintf(in.stdout, "created account %s (%s); its owner signs in as %s\n", c.Account.ID, c.Account.Name, *owner)
		fmt.Fprintf(in.stdout, "owner's portal password (shown once): %s\n", c.OwnerPassword)
		fmt.Fprintf(in.stdout, "API token (shown once): %s\n", c.APIToken)
		return nil
	}, nil
}

// accountsList is `herald accounts list`: it lists every account.
func accountsList(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	if _, err := parseArgs(in.e, in.args, 0, ""); err != nil {
		return nil, err
	}
	return func(st *store.Store) error { return listAccounts(ctx, st, in.stdout, *in.asJSON) }, nil
}

// accountsDelete is `herald accounts delete`: it deletes an account and
// everything in it.
func accountsDelete(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	pos, err := parseArgs(in.e, in.args, 1, "an account ID")
	if err != nil {
		return nil, err
	}
	return func(st *store.Store) error {
		err := st.DeleteAccount(ctx, pos[0])
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account %s", pos[0])
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(in.stdout, "deleted account %s and everything in it\n", pos[0])
		return nil
	}, nil
}

// accountsLink is `herald accounts link`: it prints a single-use portal link
// into an account.
func accountsLink(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	publicURL := in.e.String("public-url", "HERALD_PUBLIC_URL", "", "the portal's address as its users reach it (required)")
	ttl := in.e.fs.Duration("ttl", accounts.DefaultPortalLinkTTL, fmt.Sprintf("how long the link works, from %v to %v", accounts.MinPortalLinkTTL, accounts.MaxPortalLinkTTL))
	pos, err := parseArgs(in.e, in.args, 1, "an account ID")
	if err != nil {
		return nil, err
	}
	if *publicURL == "" {
		return nil, usageError{"herald accounts link", errors.New("--public-url or $HERALD_PUBLIC_URL is required: the portal's address, which the link starts with")}
	}
	if err := server.CheckPublicURL(*publicURL); err != nil {
		return nil, fmt.Errorf("--public-url %w", err)
	}
	if *ttl < accounts.MinPortalLinkTTL || *ttl > accounts.MaxPortalLinkTTL {
		return nil, usageError{in.e.fs.Name(), fmt.Errorf("--ttl %v: want from %v to %v", *ttl, accounts.MinPortalLinkTTL, accounts.MaxPortalLinkTTL)}
	}
	return func(st *store.Store) error {
		l, err := accounts.NewPortalLink(ctx, st, pos[0], *ttl, *publicURL)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account %s", pos[0])
		}
		if err != nil {
			return err
		}
		if *in.asJSON {
			return printJSON(in.stdout, map[string]any{"url": l.URL, "expiresAt": l.ExpiresAt})
		}
		fmt.Fprintf(in.stdout, "%s\n(works once, until %s)\n", l.URL, l.ExpiresAt.Format(time.RFC3339))
		return nil
	}, nil
}

// accountsLimits is `herald accounts limits`: it sets or clears an account's
// limits.
func accountsLimits(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	webhooks := in.e.fs.String("webhooks", "", "the most webhooks the account may have, 1 to 1000000, or default (no cap); left out: unchanged")
	rps := in.e.fs.String("api-rps", "", "API requests per second across all the account's tokens (bursts of twice as many), 1 to 1000000, or default (none beyond each token's own); left out: unchanged")
	pos, err := parseArgs(in.e, in.args, 1, "an account ID")
	if err != nil {
		return nil, err
	}
	var p store.LimitsPatch
	var msgs []string
	p.Webhooks = limitFlag(&msgs, "--webhooks", *webhooks)
	p.APIRequestsPerSecond = limitFlag(&msgs, "--api-rps", *rps)
	if len(msgs) > 0 {
		return nil, usageError{in.e.fs.Name(), errors.New(strings.Join(msgs, "; "))}
	}
	return func(st *store.Store) error {
		a, err := st.SetAccountLimits(ctx, pos[0], p)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account %s", pos[0])
		}
		if err != nil {
			return err
		}
		if *in.asJSON {
			return printJSON(in.stdout, accountOut(a))
		}
		fmt.Fprintf(in.stdout, "account %s: webhooks %s, API requests per second %s\n", a.ID,
			limitText(a.Limits.Webhooks, "no cap"), limitText(a.Limits.APIRequestsPerSecond, "each token's own rate"))
		return nil
	}, nil
}

// accountsResetPassword is `herald accounts reset-password`: it gives a user
// a new portal password, ending their sessions.
func accountsResetPassword(ctx context.Context, in accountsArgs) (func(*store.Store) error, error) {
	email := in.e.fs.String("email", "", "the address the user signs in with (required)")
	if _, err := parseArgs(in.e, in.args, 0, ""); err != nil {
		return nil, err
	}
	if *email = strings.TrimSpace(*email); *email == "" {
		return nil, usageError{"herald accounts reset-password", errors.New("--email is required")}
	}
	return func(st *store.Store) error {
		password := auth.NewPassword()
		hash, err := auth.HashPassword(password)
		if err != nil {
			return err
		}
		if _, err := st.ResetPassword(ctx, *email, hash); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no one signs in as %s", *email)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(in.stdout, "new portal password for %s (shown once; every session of theirs has ended): %s\n", *email, password)
		return nil
	}, nil
}

// openExisting opens (and migrates) a database that exists: a mistyped
// SQLite path is refused rather than made into an empty database.
func openExisting(ctx context.Context, sf storeFlags, stderr io.Writer) (*store.Store, error) {
	if err := store.CheckURL(*sf.database); err != nil {
		return nil, err
	}
	if err := store.CheckExists(*sf.database); err != nil {
		if errors.Is(err, store.ErrNoDatabase) {
			return nil, fmt.Errorf("--database %s: %w; herald serve makes it at first start, so run this where herald serve runs, or name it with --database or HERALD_DATABASE_URL", *sf.database, err)
		}
		return nil, fmt.Errorf("--database %s: %w", *sf.database, err)
	}
	key, err := sf.key(stderr)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, *sf.database, store.Options{Key: key})
	if errors.Is(err, store.ErrInUse) {
		return nil, fmt.Errorf("%w\nStop herald serve first, or, while it runs, use the operator API: start it with --operator-token and call /v3/operator/accounts (docs/accounts.md)", err)
	}
	return st, err
}

func listAccounts(ctx context.Context, st *store.Store, stdout io.Writer, asJSON bool) error {
	var all []store.Account
	p := store.Page{Limit: 500}
	for {
		list, next, err := st.Accounts(ctx, p)
		if err != nil {
			return err
		}
		all = append(all, list...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if asJSON {
		out := make([]accountJSON, len(all))
		for i, a := range all {
			out[i] = accountOut(a)
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tNOTIFICATION EMAIL\tCREATED")
	for _, a := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.ID, a.Name, a.NotificationEmail, a.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// limitFlag reads a limit flag: "" leaves the limit, "default" clears it,
// else a whole number from 1 to store.MaxAccountLimit.
func limitFlag(msgs *[]string, name, v string) *store.LimitChange {
	switch v {
	case "":
		return nil
	case "default":
		return &store.LimitChange{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > store.MaxAccountLimit {
		*msgs = append(*msgs, fmt.Sprintf("%s %q: want a whole number from 1 to %d, or default", name, v, store.MaxAccountLimit))
		return nil
	}
	return &store.LimitChange{Value: &n}
}

func limitText(n *int64, def string) string {
	if n == nil {
		return "default (" + def + ")"
	}
	return strconv.FormatInt(*n, 10)
}

// flagErrors joins validator errors, whose fields are flag names, into one.
func flagErrors(ve validator.Errors) error {
	if len(ve) == 0 {
		return nil
	}
	msgs := make([]string, len(ve))
	for i, e := range ve {
		msgs[i] = e.Field + " " + e.Detail
	}
	return errors.New(strings.Join(msgs, "; "))
}

// accountJSON is an account as the API shows it.
type accountJSON struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	NotificationEmail string    `json:"notificationEmail"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
	Limits            struct {
		Webhooks             *int64 `json:"webhooks"`
		APIRequestsPerSecond *int64 `json:"apiRequestsPerSecond"`
	} `json:"limits"`
}

func accountOut(a store.Account) accountJSON {
	out := accountJSON{ID: a.ID, Name: a.Name, NotificationEmail: a.NotificationEmail, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	out.Limits.Webhooks, out.Limits.APIRequestsPerSecond = a.Limits.Webhooks, a.Limits.APIRequestsPerSecond
	return out
}
