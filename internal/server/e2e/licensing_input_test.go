package e2e_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// licensingLists are the list calls whose answers make up the licensing
// state of an account.
var licensingLists = []string{
	"/v3/products", "/v3/users", "/v3/licenses", "/v3/activations", "/v3/releases", "/v3/trial-activations",
}

// snapshot reads every licensing list as raw JSON.
func snapshot(t *testing.T, h *heraldtest.Herald) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, path := range licensingLists {
		var raw json.RawMessage
		h.Must(200, "GET", path+"?limit=500", nil, &raw)
		out[path] = string(raw)
	}
	return out
}

// TestBadLicensingInputNamesTheFieldAndChangesNothing sends bad input to
// every licensing call: each answers a 4xx problem naming the field, and
// afterwards no resource changed and no event fired.
func TestBadLicensingInputNamesTheFieldAndChangesNothing(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		var product, user, limited, open, expired, release resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		pid := idOf(product)
		h.Must(201, "POST", "/v3/users", map[string]any{"email": "ada@example.com"}, &user)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": pid, "key": "TAKEN-KEY-0001", "allowedActivations": 1}, &limited)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, &open)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": pid, "expiresAt": "2001-01-01T00:00:00Z"}, &expired)
		h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": limited["key"], "fingerprint": "fp-1"}, nil)
		h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": open["key"], "fingerprint": "fp-1"}, nil)
		h.Must(201, "POST", "/v3/releases", map[string]any{"productId": pid, "version": "1.0.0"}, &release)
		rid := idOf(release)
		h.Must(201, "POST", "/v3/releases/"+rid+"/files", map[string]any{"filename": "a.zip", "size": 1}, nil)
		h.Must(201, "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "fp-t"}, nil)
		// The expired license's expiry events fire by herald's clock just
		// after its creation: they must be out before the webhook watches.
		heraldtest.Eventually(t, 10*time.Second, "the expired license's expiry events", func() bool {
			next, ok, err := h.Server.Store.NextExpiryDue(context.Background())
			return err == nil && (!ok || next.After(time.Now()))
		})
		_, hook := watch(t, h, allKinds()...)

		const missing = "01937a4f-2b3c-7d4e-9f5a-6b7c8d9e0f1a"
		lid := idOf(limited)
		tests := []struct {
			name         string
			method, path string
			body         any
			status       int
			field        string // "" for answers without field errors
		}{
			{"product without name", "POST", "/v3/products", map[string]any{}, 422, "name"},
			{"product blank name", "POST", "/v3/products", map[string]any{"name": "  "}, 422, "name"},
			{"product long name", "POST", "/v3/products", map[string]any{"name": strings.Repeat("é", 201)}, 422, "name"},
			{"product name a number", "POST", "/v3/products", map[string]any{"name": 5}, 422, "name"},
			{"product metadata an array", "POST", "/v3/products", map[string]any{"name": "x", "metadata": []int{1}}, 422, "metadata"},
			{"product unknown field", "POST", "/v3/products", map[string]any{"name": "x", "colour": "red"}, 422, "colour"},
			{"product malformed JSON", "POST", "/v3/products", `{"name":`, 400, ""},
			{"product patch empty", "PATCH", "/v3/products/" + pid, map[string]any{}, 422, "body"},
			{"product patch null name", "PATCH", "/v3/products/" + pid, map[string]any{"name": nil}, 422, "name"},
			{"product patch missing", "PATCH", "/v3/products/" + missing, map[string]any{"colour": 1}, 404, ""},
			{"product delete missing", "DELETE", "/v3/products/" + missing, nil, 404, ""},

			{"user without email", "POST", "/v3/users", map[string]any{"name": "Ada"}, 422, "email"},
			{"user bad email", "POST", "/v3/users", map[string]any{"email": "not-an-email"}, 422, "email"},
			{"user display-name email", "POST", "/v3/users", map[string]any{"email": "Zoë <zoe@example.com>"}, 422, "email"},
			{"user empty name", "POST", "/v3/users", map[string]any{"email": "zoe@example.com", "name": ""}, 422, "name"},
			{"user email taken in other case", "POST", "/v3/users", map[string]any{"email": "ADA@Example.com"}, 409, ""},
			{"user patch bad email", "PATCH", "/v3/users/" + idOf(user), map[string]any{"email": "@"}, 422, "email"},

			{"license without product", "POST", "/v3/licenses", map[string]any{}, 422, "productId"},
			{"license product not a UUID", "POST", "/v3/licenses", map[string]any{"productId": "nope"}, 422, "productId"},
			{"license unknown product", "POST", "/v3/licenses", map[string]any{"productId": missing}, 422, "productId"},
			{"license unknown user", "POST", "/v3/licenses", map[string]any{"productId": pid, "userId": missing}, 422, "userId"},
			{"license bad key", "POST", "/v3/licenses", map[string]any{"productId": pid, "key": "bad key!"}, 422, "key"},
			{"license short key", "POST", "/v3/licenses", map[string]any{"productId": pid, "key": "ABC"}, 422, "key"},
			{"license key taken", "POST", "/v3/licenses", map[string]any{"productId": pid, "key": "TAKEN-KEY-0001"}, 409, ""},
			{"license zero activations", "POST", "/v3/licenses", map[string]any{"productId": pid, "allowedActivations": 0}, 422, "allowedActivations"},
			{"license zero validity", "POST", "/v3/licenses", map[string]any{"productId": pid, "validity": 0}, 422, "validity"},
			{"license fractional validity", "POST", "/v3/licenses", map[string]any{"productId": pid, "validity": 1.5}, 422, "validity"},
			{"license bad expiresAt", "POST", "/v3/licenses", map[string]any{"productId": pid, "expiresAt": "tomorrow"}, 422, "expiresAt"},
			{"license metadata a string", "POST", "/v3/licenses", map[string]any{"productId": pid, "metadata": "x"}, 422, "metadata"},
			{"license patch key", "PATCH", "/v3/licenses/" + lid, map[string]any{"key": "NEW-KEY-0001"}, 422, "key"},
			{"license patch negative limit", "PATCH", "/v3/licenses/" + lid, map[string]any{"allowedActivations": -1}, 422, "allowedActivations"},
			{"license patch unknown user", "PATCH", "/v3/licenses/" + lid, map[string]any{"userId": missing}, 422, "userId"},
			{"license patch empty", "PATCH", "/v3/licenses/" + lid, map[string]any{}, 422, "body"},
			{"license patch missing", "PATCH", "/v3/licenses/" + missing, map[string]any{"colour": 1}, 404, ""},
			{"expires-at absent", "PATCH", "/v3/licenses/" + lid + "/expires-at", map[string]any{}, 422, "expiresAt"},
			{"expires-at bad month", "PATCH", "/v3/licenses/" + lid + "/expires-at", map[string]any{"expiresAt": "2030-13-01T00:00:00Z"}, 422, "expiresAt"},
			{"expires-at missing license", "PATCH", "/v3/licenses/" + missing + "/expires-at", map[string]any{"expiresAt": nil}, 404, ""},
			{"renew without validity", "POST", "/v3/licenses/" + lid + "/renew", nil, 422, "validity"},
			{"renew missing license", "POST", "/v3/licenses/" + missing + "/renew", nil, 404, ""},
			{"license delete missing", "DELETE", "/v3/licenses/" + missing, nil, 404, ""},

			{"activation without key", "POST", "/v3/activations", map[string]any{"fingerprint": "x"}, 422, "licenseKey"},
			{"activation unknown key", "POST", "/v3/activations", map[string]any{"licenseKey": "NOPE-NOPE", "fingerprint": "x"}, 422, "licenseKey"},
			{"activation without fingerprint", "POST", "/v3/activations", map[string]any{"licenseKey": open["key"]}, 422, "fingerprint"},
			{"activation empty hostname", "POST", "/v3/activations", map[string]any{"licenseKey": open["key"], "fingerprint": "x", "hostname": ""}, 422, "hostname"},
			{"activation of expired license", "POST", "/v3/activations", map[string]any{"licenseKey": expired["key"], "fingerprint": "x"}, 422, "licenseKey"},
			{"activation over the limit", "POST", "/v3/activations", map[string]any{"licenseKey": limited["key"], "fingerprint": "fp-2"}, 422, "licenseKey"},
			{"activation duplicate fingerprint", "POST", "/v3/activations", map[string]any{"licenseKey": open["key"], "fingerprint": "fp-1"}, 409, ""},
			{"activation delete missing", "DELETE", "/v3/activations/" + missing, nil, 404, ""},

			{"release without version", "POST", "/v3/releases", map[string]any{"productId": pid}, 422, "version"},
			{"release without product", "POST", "/v3/releases", map[string]any{"version": "1"}, 422, "productId"},
			{"release unknown product", "POST", "/v3/releases", map[string]any{"productId": missing, "version": "1"}, 422, "productId"},
			{"release version taken", "POST", "/v3/releases", map[string]any{"productId": pid, "version": "1.0.0"}, 409, ""},
			{"file without size", "POST", "/v3/releases/" + rid + "/files", map[string]any{"filename": "b.zip"}, 422, "size"},
			{"file negative size", "POST", "/v3/releases/" + rid + "/files", map[string]any{"filename": "b.zip", "size": -1}, 422, "size"},
			{"file bad sha256", "POST", "/v3/releases/" + rid + "/files", map[string]any{"filename": "b.zip", "size": 1, "sha256": "ABC"}, 422, "sha256"},
			{"file name taken", "POST", "/v3/releases/" + rid + "/files", map[string]any{"filename": "a.zip", "size": 1}, 409, ""},
			{"file of missing release", "POST", "/v3/releases/" + missing + "/files", map[string]any{"size": -1}, 404, ""},
			{"file delete missing", "DELETE", "/v3/releases/" + rid + "/files/" + missing, nil, 404, ""},
			{"release delete missing", "DELETE", "/v3/releases/" + missing, nil, 404, ""},

			{"trial without fingerprint", "POST", "/v3/trial-activations", map[string]any{"productId": pid}, 422, "fingerprint"},
			{"trial unknown product", "POST", "/v3/trial-activations", map[string]any{"productId": missing, "fingerprint": "x"}, 422, "productId"},
			{"trial bad expiresAt", "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "x", "expiresAt": "soon"}, 422, "expiresAt"},
			{"trial taken", "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "fp-t"}, 409, ""},
			{"trial delete missing", "DELETE", "/v3/trial-activations/" + missing, nil, 404, ""},

			{"list filter not a UUID", "GET", "/v3/licenses?productId=nope", nil, 422, "productId"},
			{"list limit zero", "GET", "/v3/products?limit=0", nil, 422, "limit"},
			{"list foreign cursor", "GET", "/v3/users?cursor=abc", nil, 422, "cursor"},
		}
		before := snapshot(t, h)
		logs := fired(t, h, hook.ID, func() {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					var p problem
					got := h.Do(tt.method, tt.path, tt.body, &p)
					if got != tt.status || p.Status != tt.status || p.Title == "" || p.Detail == "" {
						t.Fatalf("%s %s: %d, problem %+v; want %d", tt.method, tt.path, got, p, tt.status)
					}
					if tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field) {
						t.Errorf("errors %+v; want field %q named first", p.Errors, tt.field)
					}
				})
			}
		})
		if len(logs) != 0 {
			t.Errorf("bad input fired %v", kindsOf(logs))
		}
		after := snapshot(t, h)
		for _, path := range licensingLists {
			if before[path] != after[path] {
				t.Errorf("bad input changed %s:\nbefore %s\nafter  %s", path, before[path], after[path])
			}
		}
	})
}

// TestLicenseKeys: generated keys are five groups of five uppercase letters
// and digits, unique; a given key is kept; keys are unique per account only.
func TestLicenseKeys(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	var product resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
	format := regexp.MustCompile(`^[0-9A-Z]{5}(-[0-9A-Z]{5}){4}$`)
	seen := map[string]bool{}
	for range 20 {
		var l resource
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &l)
		key := l["key"].(string)
		if !format.MatchString(key) || seen[key] {
			t.Errorf("generated key %q: want five groups of five, never repeated", key)
		}
		seen[key] = true
	}
	var given resource
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "key": "my-own-key-42"}, &given)
	if given["key"] != "my-own-key-42" {
		t.Errorf("given key came back as %v", given["key"])
	}

	other := otherAccount(t, h)
	var p2 resource
	if code := h.DoAs(other, "POST", "/v3/products", map[string]any{"name": "App"}, &p2); code != 201 {
		t.Fatalf("account B: create product %d", code)
	}
	if code := h.DoAs(other, "POST", "/v3/licenses", map[string]any{"productId": idOf(p2), "key": "my-own-key-42"}, nil); code != 201 {
		t.Errorf("account B using account A's key: %d; want 201 (keys are unique per account)", code)
	}
}

// otherAccount creates a second account and returns its API token.
func otherAccount(t *testing.T, h *heraldtest.Herald) string {
	t.Helper()
	token := auth.NewAPIToken()
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{
		AccountName: "B", OwnerEmail: "b@example.com", PasswordHash: "x", TokenHash: auth.HashToken(token),
	}); err != nil {
		t.Fatal(err)
	}
	return token
}

// TestLicensingIsScopedToTheAccount: another account's token finds none of
// the account's licensing resources, lists none, cannot change or delete
// them and cannot refer to them.
func TestLicensingIsScopedToTheAccount(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	var product, user, license, activation, release, trial resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
	h.Must(201, "POST", "/v3/users", map[string]any{"email": "ada@example.com"}, &user)
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "userId": idOf(user), "validity": 60}, &license)
	h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "fp"}, &activation)
	h.Must(201, "POST", "/v3/releases", map[string]any{"productId": idOf(product), "version": "1"}, &release)
	h.Must(201, "POST", "/v3/trial-activations", map[string]any{"productId": idOf(product), "fingerprint": "fp"}, &trial)
	before := snapshot(t, h)

	other := otherAccount(t, h)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v3/products/" + idOf(product), nil},
		{"PATCH", "/v3/products/" + idOf(product), map[string]any{"name": "stolen"}},
		{"DELETE", "/v3/products/" + idOf(product), nil},
		{"GET", "/v3/users/" + idOf(user), nil},
		{"PATCH", "/v3/users/" + idOf(user), map[string]any{"name": "stolen"}},
		{"DELETE", "/v3/users/" + idOf(user), nil},
		{"GET", "/v3/licenses/" + idOf(license), nil},
		{"PATCH", "/v3/licenses/" + idOf(license), map[string]any{"validity": 1}},
		{"POST", "/v3/licenses/" + idOf(license) + "/renew", nil},
		{"PATCH", "/v3/licenses/" + idOf(license) + "/expires-at", map[string]any{"expiresAt": nil}},
		{"DELETE", "/v3/licenses/" + idOf(license), nil},
		{"GET", "/v3/activations/" + idOf(activation), nil},
		{"DELETE", "/v3/activations/" + idOf(activation), nil},
		{"GET", "/v3/releases/" + idOf(release), nil},
		{"POST", "/v3/releases/" + idOf(release) + "/files", map[string]any{"filename": "x", "size": 1}},
		{"DELETE", "/v3/releases/" + idOf(release), nil},
		{"GET", "/v3/trial-activations/" + idOf(trial), nil},
		{"DELETE", "/v3/trial-activations/" + idOf(trial), nil},
	} {
		if got := h.DoAs(other, c.method, c.path, c.body, nil); got != 404 {
			t.Errorf("account B: %s %s = %d; want 404", c.method, c.path, got)
		}
	}
	for _, c := range []struct {
		body  any
		path  string
		field string
	}{
		{map[string]any{"productId": idOf(product)}, "/v3/licenses", "productId"},
		{map[string]any{"licenseKey": license["key"], "fingerprint": "fp-b"}, "/v3/activations", "licenseKey"},
		{map[string]any{"productId": idOf(product), "version": "2"}, "/v3/releases", "productId"},
		{map[string]any{"productId": idOf(product), "fingerprint": "fp-b"}, "/v3/trial-activations", "productId"},
	} {
		var p problem
		if got := h.DoAs(other, "POST", c.path, c.body, &p); got != 422 || len(p.Errors) == 0 || p.Errors[0].Field != c.field {
			t.Errorf("account B: POST %s naming account A's resource: %d %+v; want 422 naming %s", c.path, got, p, c.field)
		}
	}
	for _, path := range licensingLists {
		var list struct{ Data []any }
		h.DoAs(other, "GET", path, nil, &list)
		if len(list.Data) != 0 {
			t.Errorf("account B lists %d from %s", len(list.Data), path)
		}
	}
	after := snapshot(t, h)
	for _, path := range licensingLists {
		if before[path] != after[path] {
			t.Errorf("account B changed %s", path)
		}
	}
}

// TestLicensingListsPageNewestFirst pages through licenses with a filter.
func TestLicensingListsPageNewestFirst(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	var a, b resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "A"}, &a)
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "B"}, &b)
	var ids []string
	for range 5 {
		var l resource
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(a)}, &l)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(b)}, nil)
		ids = append([]string{idOf(l)}, ids...)
	}
	var got []string
	path := "/v3/licenses?productId=" + strings.ToUpper(idOf(a)) + "&limit=2"
	for pages := 0; ; pages++ {
		var page struct {
			Data       []resource
			NextCursor *string
		}
		h.Must(200, "GET", path, nil, &page)
		for _, l := range page.Data {
			got = append(got, idOf(l))
		}
		if page.NextCursor == nil || pages > 5 {
			break
		}
		path = "/v3/licenses?productId=" + idOf(a) + "&limit=2&cursor=" + *page.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("paged %v; want %v (newest first)", got, ids)
	}
}
