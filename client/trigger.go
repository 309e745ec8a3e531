package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TriggerKinds and OperationalKinds are generated from the kinds'
// declaration (kinds_gen.go).

// Trigger makes the real API calls that fire an event of kind, creating
// first what that change needs (a product, a license…), so a developer sees
// a real delivery with one call. Those calls fire their own events too, as
// any real change would (a license.renewed comes after a product.created and
// a license.created). It returns the calls it made, in order.
func (c *Client) Trigger(ctx context.Context, kind string) ([]string, error) {
	return c.TriggerWith(ctx, kind, TriggerOptions{})
}

// TriggerOptions tune TriggerWith.
type TriggerOptions struct {
	// Cleanup deletes, once the event has fired, the product and user the
	// calls made. They are made as test data (testData: true), so their
	// deletion fires nothing and their children go silently: the account
	// is left as it was, and subscribers hear only the triggered change.
	Cleanup bool
}

// TriggerWith is Trigger made with options. What it creates is test data
// either way (but for the product of product.deleted and the user of
// user.deleted, whose deletion is the event).
func (c *Client) TriggerWith(ctx context.Context, kind string, o TriggerOptions) (calls []string, err error) {
	var product, user string // what is left to clean up
	defer func() {
		if !o.Cleanup || err != nil {
			return
		}
		for _, x := range []struct{ path, id string }{{"/v3/products/", product}, {"/v3/users/", user}} {
			if x.id == "" {
				continue
			}
			if derr := c.do(ctx, "DELETE", x.path+esc(x.id), nil, nil, nil); derr != nil {
				err = fmt.Errorf("trigger %s: clean up %s%s: %w", kind, x.path, x.id, derr)
				return
			}
			calls = append(calls, "DELETE "+x.path+x.id+" (cleanup: test data, fires nothing)")
		}
	}()
	return c.fire(ctx, kind, &product, &user)
}

// fire makes the calls, and leaves in *product and *user the ids of what
// it made that still exists.
func (c *Client) fire(ctx context.Context, kind string, product, user *string) ([]string, error) {
	if slices.Contains(OperationalKinds, kind) {
		return nil, fmt.Errorf("trigger: %s fires only when a webhook's health changes, which no API call can do on purpose; "+
			"to see one, send a sample to a webhook subscribed to it: POST /v3/webhooks/{id}/test {\"event\": %q}", kind, kind)
	}
	if !slices.Contains(TriggerKinds, kind) {
		return nil, fmt.Errorf("trigger: unknown event kind %q; want one of %s", kind, strings.Join(TriggerKinds, ", "))
	}
	var calls []string
	note := func(call string, err error) error {
		if err != nil {
			return fmt.Errorf("trigger %s: %s: %w", kind, call, err)
		}
		calls = append(calls, call)
		return nil
	}
	suffix := randomHex(4)
	switch kind {
	case "user.created", "user.updated", "user.deleted":
		var u User
		err := c.do(ctx, "POST", "/v3/users", nil, map[string]any{"email": "trigger-" + suffix + "@example.com", "name": "Trigger " + suffix,
			"testData": kind != "user.deleted"}, &u)
		if err := note("POST /v3/users", err); err != nil {
			return calls, err
		}
		*user = u.ID
		if kind == "user.created" {
			return calls, nil
		}
		if kind == "user.updated" {
			_, err = c.UpdateUser(ctx, u.ID, "Trigger "+suffix+" (renamed)")
			return calls, note("PATCH /v3/users/"+u.ID, err)
		}
		*user = ""
		return calls, note("DELETE /v3/users/"+u.ID, c.DeleteUser(ctx, u.ID))
	}

	var p Product
	err := c.do(ctx, "POST", "/v3/products", nil, map[string]any{"name": "herald trigger " + suffix,
		"metadata": map[string]any{"source": "herald trigger"}, "testData": kind != "product.deleted"}, &p)
	if err := note("POST /v3/products", err); err != nil {
		return calls, err
	}
	*product = p.ID
	switch kind {
	case "product.created":
		return calls, nil
	case "product.updated":
		_, err := c.UpdateProduct(ctx, p.ID, "herald trigger "+suffix+" (renamed)")
		return calls, note("PATCH /v3/products/"+p.ID, err)
	case "product.deleted":
		*product = ""
		return calls, note("DELETE /v3/products/"+p.ID, c.DeleteProduct(ctx, p.ID))
	case "release.created", "release.deleted":
		r, err := c.CreateRelease(ctx, p.ID, "1.0.0-"+suffix)
		if err := note("POST /v3/releases", err); err != nil || kind == "release.created" {
			return calls, err
		}
		return calls, note("DELETE /v3/releases/"+r.ID, c.DeleteRelease(ctx, r.ID))
	case "trial-activation.created", "trial-activation.deleted":
		tr, err := c.StartTrial(ctx, p.ID, "trigger-"+suffix)
		if err := note("POST /v3/trial-activations", err); err != nil || kind == "trial-activation.created" {
			return calls, err
		}
		return calls, note("DELETE /v3/trial-activations/"+tr.ID, c.DeleteTrial(ctx, tr.ID))
	}

	// Everything else is about a license.
	l, err := c.CreateLicense(ctx, LicenseCreate{ProductID: p.ID, Validity: 30, Metadata: map[string]any{"source": "herald trigger"}})
	if err := note("POST /v3/licenses", err); err != nil {
		return calls, err
	}
	switch kind {
	case "license.created":
		return calls, nil
	case "license.updated":
		_, err := c.UpdateLicenseMetadata(ctx, l.ID, map[string]any{"source": "herald trigger", "updated": true})
		return calls, note("PATCH /v3/licenses/"+l.ID, err)
	case "license.renewed":
		_, err := c.RenewLicense(ctx, l.ID)
		return calls, note("POST /v3/licenses/"+l.ID+"/renew", err)
	case "license.expiresAt.updated":
		_, err := c.SetLicenseExpiresAt(ctx, l.ID, time.Now().AddDate(0, 0, 90))
		return calls, note("PATCH /v3/licenses/"+l.ID+"/expires-at", err)
	case "license.deleted":
		return calls, note("DELETE /v3/licenses/"+l.ID, c.DeleteLicense(ctx, l.ID))
	case "license.expiring-soon":
		// The license expires in 30 seconds, inside any account's lead
		// time (an hour at least): herald fires it at once, and
		// license.expired when the 30 seconds have passed.
		return calls, nil
	case "license.expired":
		_, err := c.SetLicenseExpiresAt(ctx, l.ID, time.Now())
		return calls, note("PATCH /v3/licenses/"+l.ID+"/expires-at (now)", err)
	case "license.first-activated", "activation.created", "activation.deleted":
		a, err := c.Activate(ctx, l.Key, "trigger-"+suffix)
		if err := note("POST /v3/activations", err); err != nil || kind != "activation.deleted" {
			return calls, err
		}
		return calls, note("DELETE /v3/activations/"+a.ID, c.DeleteActivation(ctx, a.ID))
	}
	// A kind declared in kinds.yaml whose calls were not taught here: said
	// plainly rather than making calls that fire something else.
	return calls, fmt.Errorf("trigger: %s is a kind herald fires, but Trigger does not know the calls that fire it", kind)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
