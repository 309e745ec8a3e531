package e2e_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/backup"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/testdb"
)

// No secret rests in plain text (SECURITY.md's table): every kind of secret
// herald holds is made the way a user makes it (a webhook's own token,
// created with an Idempotency-Key so its answer is kept, a rotation's next
// token, a header's value, API tokens made through the API and the
// portal, the owner's and an invited member's passwords, an invitation's
// link, an operator's portal link and a new account's credentials, a
// session's cookie), and then the database is searched for each: on
// SQLite the file, its WAL and a backup copy, on PostgreSQL a pg_dump of
// herald's schema.
func TestNoSecretRestsInPlainText(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, OperatorToken: operatorToken})
		ctx := context.Background()
		secrets := map[string]string{"the owner's password": h.Password, "the first API token": h.Token}

		// A webhook with its own token, made with an Idempotency-Key: its
		// answer, token and all, is kept for a retry.
		const token = "whsec_at_rest_search_token_0123456789ab"
		req, _ := http.NewRequest("POST", h.URL+"/v3/webhooks", strings.NewReader(`{"name":"w","url":"https://example.com/w","events":["license.created"],
"token":"`+token+`","headers":{"X-Receiver-Key":"header-value-at-rest-4242"}}`))
		req.Header.Set("Authorization", "Bearer "+h.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "create-the-webhook")
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create the webhook: %d", resp.StatusCode)
		}
		secrets["a webhook's token (its kept answer too)"], secrets["a header's value"] = token, "header-value-at-rest-4242"
		hooks, err := h.API.ListWebhooks(ctx, client.WebhookFilter{})
		if err != nil || len(hooks.Data) != 1 {
			t.Fatalf("webhooks: %v", err)
		}
		if _, err := h.API.RotateWebhookToken(ctx, hooks.Data[0].ID, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, next, err := h.API.WebhookTokens(ctx, hooks.Data[0].ID); err != nil || next == "" {
			t.Fatalf("next token: %v", err)
		} else {
			secrets["a rotation's next token"] = next
		}
		api, err := h.API.CreateAPIToken(ctx, client.APITokenCreate{Name: "api", Scope: "write"})
		if err != nil {
			t.Fatal(err)
		}
		secrets["an API token made through the API"] = api.Secret
		pull, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "pull", Type: "pull", Events: []string{"license.created"}})
		if err != nil {
			t.Fatal(err)
		}
		if secrets["a pull token"], err = h.API.CreatePullToken(ctx, pull.ID); err != nil {
			t.Fatal(err)
		}

		// The portal: an API token, an invitation, a member's password.
		owner := mustSignIn(t, h)
		owner.get("/account/api-tokens")
		_, _, body := owner.submit("/account/api-tokens", url.Values{"name": {"portal"}, "scope": {"read"}, "expires": {""}})
		m := newTokenValue.FindStringSubmatch(body)
		if m == nil {
			t.Fatal("no token shown")
		}
		secrets["an API token made in the portal"] = m[1]
		owner.get("/account/members")
		_, _, body = owner.submit("/account/members", url.Values{"email": {"m@example.com"}, "role": {"member"}})
		im := inviteLink.FindStringSubmatch(body)
		if im == nil {
			t.Fatal("no invitation link")
		}
		link, _ := url.Parse(html.UnescapeString(im[1]))
		secrets["an invitation's token"] = link.Query().Get("token")
		member := newBrowser(t, h)
		member.get(link.RequestURI())
		const memberPassword = "the member's passphrase at rest"
		if code, _, _ := member.post("/invitation", url.Values{"token": {link.Query().Get("token")}, "password": {memberPassword}, "confirm": {memberPassword}}); code != http.StatusSeeOther {
			t.Fatalf("accept the invitation: %d", code)
		}
		secrets["a member's password"] = memberPassword
		for _, c := range member.c.Jar.Cookies(mustURL(t, h.URL)) {
			if c.Value != "" && len(c.Value) >= 16 {
				secrets["a session's cookie ("+c.Name+")"] = c.Value
			}
		}

		// The operator: another account's credentials, a portal link.
		op := client.New(h.URL, operatorToken, nil)
		other, err := op.CreateAccount(ctx, client.AccountCreate{Name: "other", OwnerEmail: "other@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		secrets["a new account's API token"], secrets["a new account's password"] = other.APIToken, other.OwnerPassword
		pl, err := op.CreatePortalLink(ctx, other.Account.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		plu, _ := url.Parse(pl.URL)
		secrets["a portal link's token"] = plu.Query().Get("token")

		for what, secret := range secrets {
			if len(secret) < 12 {
				t.Fatalf("%s is %q: too short to search for", what, secret)
			}
		}
		search := func(where string, data []byte) {
			t.Helper()
			if len(data) == 0 {
				t.Fatalf("%s is empty", where)
			}
			for what, secret := range secrets {
				// pg_dump writes a bytea column as hexadecimal.
				if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(hex.EncodeToString([]byte(secret)))) {
					t.Errorf("%s holds %s in plain text", where, what)
				}
			}
		}
		// The search must be able to find what it looks for: a value the
		// account stores as written is found.
		if _, err := h.API.UpdateAccount(ctx, client.AccountUpdate{Name: ptr("searchable-account-name-0042")}); err != nil {
			t.Fatal(err)
		}

		if path, ok := strings.CutPrefix(db, "sqlite:"); ok {
			dump := func(p string) []byte {
				b, err := os.ReadFile(p)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return b
			}
			file, wal := dump(path), dump(path+"-wal")
			if !bytes.Contains(append(file, wal...), []byte("searchable-account-name-0042")) {
				t.Fatal("the search does not find the account's name in the file or its WAL")
			}
			search("the SQLite file", file)
			if len(wal) > 0 {
				search("its WAL", wal)
			}
			copyTo := filepath.Join(t.TempDir(), "backup.db")
			if _, err := backup.Backup(ctx, path, copyTo, backup.Key{Value: h.Options.Key}); err != nil {
				t.Fatal(err)
			}
			search("a backup copy", dump(copyTo))
			return
		}
		raw, err := testdb.RawURL(db)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(raw)
		schema := u.Query().Get("search_path")
		q := u.Query()
		q.Del("search_path")
		u.RawQuery = q.Encode()
		out, err := exec.CommandContext(ctx, "pg_dump", "--no-owner", "--schema", schema, "--dbname", u.String()).Output()
		heraldtest.SkipUnless(t, err == nil || !isNotFound(err), "pg_dump is not installed")
		if err != nil {
			t.Fatalf("pg_dump: %v", err)
		}
		if !bytes.Contains(out, []byte("searchable-account-name-0042")) {
			t.Fatal("the search does not find the account's name in the dump")
		}
		search("a pg_dump of herald's schema", out)
	})
}

func ptr[T any](v T) *T { return &v }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func isNotFound(err error) bool {
	var e *exec.Error
	return errors.As(err, &e)
}
