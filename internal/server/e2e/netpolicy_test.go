package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// By default herald refuses to deliver to loopback, private, link-local and
// metadata addresses: when a URL is saved, and again when it connects, so a
// name that resolves to such an address later (DNS rebinding) is refused too.
func TestDefaultPolicyRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{DenyPrivate: true})
	for _, u := range []string{
		"http://127.0.0.1:8080/hook", "http://localhost/hook", "http://10.0.0.7/hook",
		"http://169.254.169.254/latest/meta-data", "http://[::1]/hook", "http://192.168.1.1/hook",
	} {
		var p struct {
			Errors []struct{ Field, Detail string }
		}
		if got := h.Do("POST", "/v3/webhooks", map[string]any{"name": "n", "url": u, "events": []string{"license.created"}}, &p); got != 422 || len(p.Errors) == 0 || p.Errors[0].Field != "url" {
			t.Errorf("%s: %d %+v; want 422 naming url", u, got, p)
		}
	}

	// A URL that passed validation but leads to loopback at connect time.
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("rebound", "https://example.com/hook", "license.created")
	setURL(t, h, hook.ID, rcv.URL)
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the attempt", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].AttemptCount >= 1
	})
	l := h.Log(h.Logs("webhookId=" + hook.ID)[0].ID)
	if rcv.Count() != 0 {
		t.Errorf("a delivery reached a loopback receiver under the default policy")
	}
	if l.RetryReason == nil || !strings.Contains(*l.RetryReason, "refused by policy") {
		t.Errorf("retry reason %v; want the policy named", l.RetryReason)
	}
	var res struct {
		Succeeded bool
		Error     *string
	}
	h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", nil, &res)
	if res.Succeeded || res.Error == nil || !strings.Contains(*res.Error, "refused by policy") || rcv.Count() != 0 {
		t.Errorf("Test to a loopback address: %+v", res)
	}
}

// setURL changes a webhook's URL in the database, past the API's validation,
// as a DNS name that later resolves elsewhere would.
func setURL(t *testing.T, h *heraldtest.Herald, id, url string) {
	t.Helper()
	err := h.Server.Store.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE webhooks SET url = ? WHERE id = ?`, url, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Allowing private networks does not allow cloud metadata addresses, however
// written: saving one is refused naming the url. (No URL outside loopback is
// ever saved here, so nothing can be sent there.)
func TestPrivateNetworksAllowedStillRefuseMetadata(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{}) // private networks allowed
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("loopback is fine", rcv.URL, "license.created")
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials",
		"http://100.100.100.200/latest/meta-data/", "http://192.0.0.192/opc/v2/instance/",
		"http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/", "http://[64:ff9b::a9fe:a9fe]/",
		"http://2852039166/", "http://0xa9fea9fe/", "http://0251.0376.0251.0376/",
	} {
		for _, c := range []struct{ method, path string }{{"POST", "/v3/webhooks"}, {"PATCH", "/v3/webhooks/" + hook.ID}} {
			var p struct {
				Errors []struct{ Field, Detail string }
			}
			got := h.Do(c.method, c.path, map[string]any{"name": "n", "url": u, "events": []string{"license.created"}}, &p)
			if got < 400 || got >= 500 || len(p.Errors) == 0 || p.Errors[0].Field != "url" {
				t.Errorf("%s %s: %d %+v; want a 4xx naming url", c.method, u, got, p)
			}
		}
	}
	if w := h.Webhook(hook.ID); w.URL != rcv.URL {
		t.Errorf("the webhook's URL is now %s; want it unchanged", w.URL)
	}
	var list struct{ Data []heraldtest.Webhook }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 1 {
		t.Errorf("%d webhooks; want only the loopback one", len(list.Data))
	}
}

// A URL's host is checked as the dialer will read it: "①②⑦.⓪.⓪.①", which
// IDNA maps to 127.0.0.1, and "metadata.google.internal." with its
// trailing dot were saved, to be refused only at every connection. With
// the guard on both are refused when saved; with private networks allowed
// the metadata name still is (and the loopback one is saved, as its
// connections are allowed too). Each is decided without a lookup and
// nothing is sent: no event fires.
func TestURLsAreCheckedAsTheDialerReadsThem(t *testing.T) {
	t.Parallel()
	create := func(h *heraldtest.Herald, u string) (int, string) {
		var p struct {
			Errors []struct{ Field, Detail string }
		}
		got := h.Do("POST", "/v3/webhooks", map[string]any{"name": "n", "url": u, "events": []string{"license.created"}}, &p)
		if len(p.Errors) == 0 {
			return got, ""
		}
		return got, p.Errors[0].Field + ": " + p.Errors[0].Detail
	}
	guarded := heraldtest.Start(t, heraldtest.Options{DenyPrivate: true})
	for _, u := range []string{
		"http://①②⑦.⓪.⓪.①/", "http://１２７.０.０.１:8080/hook", "http://ｌｏｃａｌｈｏｓｔ/",
		"http://metadata.google.internal./", "http://METADATA.google.internal/computeMetadata/v1/", "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/",
	} {
		if got, field := create(guarded, u); got != 422 || !strings.HasPrefix(field, "url: ") {
			t.Errorf("guard on, %s: %d %q; want 422 naming url", u, got, field)
		}
	}
	open := heraldtest.Start(t, heraldtest.Options{}) // private networks allowed, metadata not
	for _, u := range []string{"http://metadata.google.internal./", "http://metadata.google.internal/", "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/"} {
		if got, field := create(open, u); got != 422 || field != "url: resolves to a cloud metadata address" {
			t.Errorf("private networks allowed, %s: %d %q; want 422: url resolves to a cloud metadata address", u, got, field)
		}
	}
	if got, field := create(open, "http://①②⑦.⓪.⓪.①:9/"); got != 201 {
		t.Errorf("private networks allowed, a loopback address however written: %d %q; want it saved", got, field)
	}
}
