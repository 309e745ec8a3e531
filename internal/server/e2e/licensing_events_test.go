package e2e_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// The seven event kinds the specification names.
var namedKinds = []string{
	"license.created", "license.updated", "license.renewed", "license.expiresAt.updated",
	"license.deleted", "license.first-activated", "activation.deleted",
}

// TestNamedEventsReachSubscribersOnly fires each of the seven named kinds
// through the API. One webhook per kind subscribes to that kind alone: each
// gets its kind's event, with the resource as the API answered it, and none
// of the six others.
func TestNamedEventsReachSubscribersOnly(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcvs := map[string]*heraldtest.Receiver{}
		for _, k := range namedKinds {
			rcvs[k], _ = watch(t, h, k)
		}
		var product, created, updated, renewed, expiresAt, activation, beforeDelete resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "Zoë's App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "validity": 86400,
			"metadata": map[string]any{"customer": "Zoë – 日本語 – 🚀"}}, &created)
		id := idOf(created)
		h.Must(200, "PATCH", "/v3/licenses/"+id, map[string]any{"allowedActivations": 2}, &updated)
		h.Must(200, "POST", "/v3/licenses/"+id+"/renew", nil, &renewed)
		h.Must(200, "PATCH", "/v3/licenses/"+id+"/expires-at", map[string]any{"expiresAt": "2031-01-01T00:00:00Z"}, &expiresAt)
		h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": created["key"], "fingerprint": "fp-1"}, &activation)
		var firstActivated resource
		h.Must(200, "GET", "/v3/licenses/"+id, nil, &firstActivated)
		h.Must(204, "DELETE", "/v3/activations/"+idOf(activation), nil, nil)
		h.Must(200, "GET", "/v3/licenses/"+id, nil, &beforeDelete)
		h.Must(204, "DELETE", "/v3/licenses/"+id, nil, nil)

		want := map[string]resource{
			"license.created":           created,
			"license.updated":           updated,
			"license.renewed":           renewed,
			"license.expiresAt.updated": expiresAt,
			"license.first-activated":   firstActivated,
			"activation.deleted":        activation,
			"license.deleted":           beforeDelete,
		}
		for _, k := range namedKinds {
			got := receive(t, rcvs[k], 1)
			if got[0].Event != k {
				t.Errorf("webhook subscribed to %s got %s", k, got[0].Event)
				continue
			}
			sameJSON(t, k+" data", got[0].Data, jsonOf(t, want[k]))
		}
		if firstActivated["totalActivations"] != 1.0 || firstActivated["updatedAt"] != expiresAt["updatedAt"] {
			t.Errorf("after the activation: totalActivations %v, updatedAt %v; want 1 and unchanged (%v)",
				firstActivated["totalActivations"], firstActivated["updatedAt"], expiresAt["updatedAt"])
		}
		if beforeDelete["totalActivations"] != 0.0 {
			t.Errorf("after deleting the activation: totalActivations %v; want 0", beforeDelete["totalActivations"])
		}
	})
}

// TestActivationsFireFirstActivatedOnceAndNeverUpdated activates a license
// twice, then deletes both activations and activates again: one
// license.first-activated in all, and no license.updated.
func TestActivationsFireFirstActivatedOnceAndNeverUpdated(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcv, hook := watch(t, h, "license.first-activated", "license.updated", "activation.created", "activation.deleted")
		var product, license resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "allowedActivations": 2}, &license)
		key := license["key"]

		var a1, a2 resource
		logs := fired(t, h, hook.ID, func() {
			h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": key, "fingerprint": "fp-1", "hostname": "zoë-laptop", "os": "linux"}, &a1)
			h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": key, "fingerprint": "fp-2"}, &a2)
		})
		want := []string{"activation.created", "license.first-activated", "activation.created"}
		if got := kindsOf(logs); !slices.Equal(got, want) {
			t.Fatalf("two activations fired %v; want %v", got, want)
		}
		got := receive(t, rcv, 3)
		if n := countKind(got, "license.first-activated"); n != 1 {
			t.Errorf("receiver got %d license.first-activated; want 1", n)
		}
		if n := countKind(got, "license.updated"); n != 0 {
			t.Errorf("receiver got %d license.updated; want 0", n)
		}

		logs = fired(t, h, hook.ID, func() {
			h.Must(204, "DELETE", "/v3/activations/"+idOf(a1), nil, nil)
			h.Must(204, "DELETE", "/v3/activations/"+idOf(a2), nil, nil)
			h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": key, "fingerprint": "fp-3"}, nil)
		})
		want = []string{"activation.deleted", "activation.deleted", "activation.created"}
		if got := kindsOf(logs); !slices.Equal(got, want) {
			t.Errorf("deactivating both and activating again fired %v; want %v (first-activated is once, ever)", got, want)
		}
		var after resource
		h.Must(200, "GET", "/v3/licenses/"+idOf(license), nil, &after)
		if after["totalActivations"] != 1.0 || after["updatedAt"] != license["updatedAt"] {
			t.Errorf("license after: totalActivations %v, updatedAt %v; want 1 and %v", after["totalActivations"], after["updatedAt"], license["updatedAt"])
		}
	})
}

func countKind(ds []delivered, kind string) int {
	n := 0
	for _, d := range ds {
		if d.Event == kind {
			n++
		}
	}
	return n
}

// TestDeletingLicenseDeliversOnlyLicenseDeleted: a license with two
// activations; deleting it delivers exactly one event, license.deleted, and
// its activations are gone.
func TestDeletingLicenseDeliversOnlyLicenseDeleted(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		var product, license resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &license)
		var acts [2]resource
		for i := range acts {
			h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "fp-" + string(rune('a'+i))}, &acts[i])
		}
		h.Must(200, "GET", "/v3/licenses/"+idOf(license), nil, &license)

		rcv, hook := watch(t, h, allKinds()...)
		logs := fired(t, h, hook.ID, func() { h.Must(204, "DELETE", "/v3/licenses/"+idOf(license), nil, nil) })
		if got := kindsOf(logs); !slices.Equal(got, []string{"license.deleted"}) {
			t.Fatalf("deleting the license fired %v; want [license.deleted]", got)
		}
		got := receive(t, rcv, 1)
		sameJSON(t, "license.deleted data", got[0].Data, jsonOf(t, license))
		for _, a := range acts {
			if code := h.Do("GET", "/v3/activations/"+idOf(a), nil, nil); code != 404 {
				t.Errorf("activation of the deleted license: GET %d; want 404", code)
			}
		}
		if n := listLen(t, h, "/v3/activations?licenseId="+idOf(license)); n != 0 {
			t.Errorf("%d activations listed for the deleted license", n)
		}
	})
}

// TestDeletingProductCascadesSilently: a product with licenses (one
// activated), a release with a file and a trial activation; deleting it
// delivers product.deleted and nothing for its children, which are gone.
func TestDeletingProductCascadesSilently(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		var product, other, l1, release resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "Doomed"}, &product)
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "Kept"}, &other)
		pid := idOf(product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, &l1)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, nil)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(other)}, nil)
		h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": l1["key"], "fingerprint": "fp"}, nil)
		h.Must(201, "POST", "/v3/releases", map[string]any{"productId": pid, "version": "1.0.0"}, &release)
		h.Must(201, "POST", "/v3/releases/"+idOf(release)+"/files", map[string]any{"filename": "app.tar.gz", "size": 10}, nil)
		h.Must(201, "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "fp"}, nil)

		rcv, hook := watch(t, h, allKinds()...)
		logs := fired(t, h, hook.ID, func() { h.Must(204, "DELETE", "/v3/products/"+pid, nil, nil) })
		if got := kindsOf(logs); !slices.Equal(got, []string{"product.deleted"}) {
			t.Fatalf("deleting the product fired %v; want [product.deleted]", got)
		}
		got := receive(t, rcv, 1)
		sameJSON(t, "product.deleted data", got[0].Data, jsonOf(t, product))
		for path, want := range map[string]int{
			"/v3/licenses?productId=" + pid:          0,
			"/v3/licenses":                           1, // the other product's
			"/v3/activations":                        0,
			"/v3/releases?productId=" + pid:          0,
			"/v3/trial-activations?productId=" + pid: 0,
		} {
			if n := listLen(t, h, path); n != want {
				t.Errorf("GET %s lists %d; want %d", path, n, want)
			}
		}
		if code := h.Do("GET", "/v3/releases/"+idOf(release), nil, nil); code != 404 {
			t.Errorf("release of the deleted product: GET %d; want 404", code)
		}
	})
}

// TestDeletingReleaseRemovesFilesSilently: release.deleted carries the
// release as it was, files included; the files fire nothing.
func TestDeletingReleaseRemovesFilesSilently(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcv, hook := watch(t, h, allKinds()...)
		var product, release resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		logs := fired(t, h, hook.ID, func() {
			h.Must(201, "POST", "/v3/releases", map[string]any{"productId": idOf(product), "version": "2.1.0"}, &release)
			for _, name := range []string{"app-linux.tar.gz", "app-macos.zip"} {
				h.Must(201, "POST", "/v3/releases/"+idOf(release)+"/files", map[string]any{"filename": name, "size": 1234,
					"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}, nil)
			}
			h.Must(200, "GET", "/v3/releases/"+idOf(release), nil, &release)
			h.Must(204, "DELETE", "/v3/releases/"+idOf(release), nil, nil)
		})
		if got := kindsOf(logs); !slices.Equal(got, []string{"release.created", "release.deleted"}) {
			t.Fatalf("fired %v; want [release.created release.deleted]", got)
		}
		got := receive(t, rcv, 3)
		if len(release["files"].([]any)) != 2 {
			t.Fatalf("release before deletion has files %v; want 2", release["files"])
		}
		sameJSON(t, "release.deleted data", only(t, got, "release.deleted").Data, jsonOf(t, release))
	})
}

// TestDeletingUserKeepsLicensesUnassigned: users and licenses are
// siblings. Deleting a user fires user.deleted only; their licenses stay,
// with userId null.
func TestDeletingUserKeepsLicensesUnassigned(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		var product, user, keep resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/users", map[string]any{"email": "zoe@example.com", "name": "Zoë"}, &user)
		h.Must(201, "POST", "/v3/users", map[string]any{"email": "ada@example.com"}, &keep)
		var licenses []resource
		for _, u := range []string{idOf(user), idOf(user), idOf(keep)} {
			var l resource
			h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "userId": u}, &l)
			licenses = append(licenses, l)
		}
		if n := listLen(t, h, "/v3/licenses?userId="+idOf(user)); n != 2 {
			t.Fatalf("%d licenses listed for the user; want 2", n)
		}

		rcv, hook := watch(t, h, allKinds()...)
		logs := fired(t, h, hook.ID, func() { h.Must(204, "DELETE", "/v3/users/"+idOf(user), nil, nil) })
		if got := kindsOf(logs); !slices.Equal(got, []string{"user.deleted"}) {
			t.Fatalf("deleting the user fired %v; want [user.deleted]", got)
		}
		sameJSON(t, "user.deleted data", receive(t, rcv, 1)[0].Data, jsonOf(t, user))
		for i, l := range licenses {
			var now resource
			h.Must(200, "GET", "/v3/licenses/"+idOf(l), nil, &now)
			want := any(nil)
			if i == 2 {
				want = idOf(keep)
			}
			if now["userId"] != want || now["key"] != l["key"] {
				t.Errorf("license %d after the user's deletion: userId %v; want %v", i, now["userId"], want)
			}
		}
		if code := h.Do("GET", "/v3/users/"+idOf(user), nil, nil); code != 404 {
			t.Errorf("deleted user: GET %d; want 404", code)
		}
	})
}

// TestRenewalAndExpiresAtFireTheirOwnKinds: a webhook subscribed to both
// sees both, each with its own kind; one subscribed to license.updated sees
// neither.
func TestRenewalAndExpiresAtFireTheirOwnKinds(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		expiry, _ := watch(t, h, "license.renewed", "license.expiresAt.updated")
		generic, _ := watch(t, h, "license.updated")
		var product, license, renewed, set resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "validity": 31536000,
			"expiresAt": "2030-06-01T12:00:00.5+02:00"}, &license)
		if license["expiresAt"] != "2030-06-01T10:00:00.500Z" {
			t.Fatalf("expiresAt %v; want it in UTC with milliseconds", license["expiresAt"])
		}
		h.Must(200, "POST", "/v3/licenses/"+idOf(license)+"/renew", nil, &renewed)
		if renewed["expiresAt"] != "2031-06-01T10:00:00.500Z" {
			t.Errorf("renewed expiresAt %v; want the old expiry plus the validity, 2031-06-01T10:00:00.500Z", renewed["expiresAt"])
		}
		h.Must(200, "PATCH", "/v3/licenses/"+idOf(license)+"/expires-at", map[string]any{"expiresAt": nil}, &set)
		if set["expiresAt"] != nil {
			t.Errorf("expiresAt %v after setting null; want null", set["expiresAt"])
		}
		got := receive(t, expiry, 2)
		sameJSON(t, "license.renewed data", only(t, got, "license.renewed").Data, jsonOf(t, renewed))
		sameJSON(t, "license.expiresAt.updated data", only(t, got, "license.expiresAt.updated").Data, jsonOf(t, set))
		if n := generic.Count(); n != 0 {
			t.Errorf("a webhook subscribed to license.updated got %d deliveries", n)
		}
	})
}

// TestRenewCountsFromNowOnceExpired: an expired or perpetual license is
// renewed from now; one without a validity cannot be.
func TestRenewCountsFromNowOnceExpired(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	var product, expired, none resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "validity": 3600, "expiresAt": "2001-01-01T00:00:00Z"}, &expired)
	before := time.Now()
	h.Must(200, "POST", "/v3/licenses/"+idOf(expired)+"/renew", nil, &expired)
	at, err := time.Parse(time.RFC3339, expired["expiresAt"].(string))
	if err != nil || at.Before(before.Add(time.Hour-time.Second)) || at.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("renewed expired license expires %v; want an hour from now", expired["expiresAt"])
	}
	h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &none)
	var p problem
	if code := h.Do("POST", "/v3/licenses/"+idOf(none)+"/renew", nil, &p); code != 422 || len(p.Errors) == 0 || p.Errors[0].Field != "validity" {
		t.Errorf("renewing a license without validity: %d %+v; want 422 naming validity", code, p)
	}
}

func listLen(t *testing.T, h *heraldtest.Herald, path string) int {
	t.Helper()
	var out struct{ Data []any }
	h.Must(200, "GET", path, nil, &out)
	return len(out.Data)
}

// TestConcurrentActivationsKeepTheLimit: machines activating one license at
// once never exceed allowedActivations, and license.first-activated fires
// once.
func TestConcurrentActivationsKeepTheLimit(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		_, hook := watch(t, h, "license.first-activated", "activation.created")
		var product, license resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "allowedActivations": 5}, &license)
		const machines = 20
		codes := make(chan int, machines)
		logs := fired(t, h, hook.ID, func() {
			var wg sync.WaitGroup
			for i := range machines {
				wg.Go(func() {
					codes <- h.Do("POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": fmt.Sprint("fp-", i)}, nil)
				})
			}
			wg.Wait()
			close(codes)
		})
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if count[201] != 5 || count[422] != machines-5 {
			t.Errorf("answers %v; want 5 × 201 and %d × 422", count, machines-5)
		}
		if n := countLogs(logs, "license.first-activated"); n != 1 {
			t.Errorf("%d license.first-activated; want 1", n)
		}
		if n := countLogs(logs, "activation.created"); n != 5 {
			t.Errorf("%d activation.created; want 5", n)
		}
		h.Must(200, "GET", "/v3/licenses/"+idOf(license), nil, &license)
		if license["totalActivations"] != 5.0 {
			t.Errorf("totalActivations %v; want 5", license["totalActivations"])
		}
	})
}

func countLogs(logs []heraldtest.Log, kind string) int {
	n := 0
	for _, l := range logs {
		if l.Event == kind {
			n++
		}
	}
	return n
}
