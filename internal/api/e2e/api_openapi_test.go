package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/openapitest"
)

// coverage records which documented operations a test called, with the
// statuses they answered.
type coverage struct {
	base   http.RoundTripper
	router routers.Router
	mu     sync.Mutex
	seen   map[string][]int // operationId → statuses answered
}

func newCoverage(t *testing.T, base http.RoundTripper) *coverage {
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &coverage{base: base, router: r, seen: map[string][]int{}}
}

func (c *coverage) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if route, _, err := c.router.FindRoute(req); err == nil {
		c.mu.Lock()
		c.seen[route.Operation.OperationID] = append(c.seen[route.Operation.OperationID], resp.StatusCode)
		c.mu.Unlock()
	}
	return resp, nil
}

// TestAPIMatchesItsReference drives every call of the API reference with
// real requests, valid and invalid, through a transport that checks every
// request and answer against the document: the document cannot drift from
// the handlers without this test failing. At the end every documented
// operation must have been called and have succeeded at least once.
func TestAPIMatchesItsReference(t *testing.T) {
	t.Parallel()
	var cov *coverage
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken, Transport: func(rt http.RoundTripper) http.RoundTripper {
		cov = newCoverage(t, openapitest.Transport(t, rt))
		return cov
	}, Delivery: delivery.Config{SuspendAfter: 1}}) // one failed event suspends, for the recovery calls
	c := client{t: t, h: h}
	rcv := heraldtest.NewReceiver(t)

	// Operations: the document itself, health.
	var doc map[string]any
	c.call(200, "GET", "/v3/openapi.json", nil, &doc, noToken)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("/v3/openapi.json: openapi = %v", doc["openapi"])
	}
	for _, k := range allKinds(t) {
		var schema map[string]any
		c.call(200, "GET", "/v3/event-types/"+k+"/schema", nil, &schema, noToken)
		if schema["title"] != k {
			t.Errorf("/v3/event-types/%s/schema: title = %v", k, schema["title"])
		}
	}
	// The kinds are listed with where each one's schema is, and an unknown
	// kind's 404 names them.
	var types struct {
		Data []struct{ Kind, Group, Description, Resource, Schema string }
	}
	c.call(200, "GET", "/v3/event-types", nil, &types, noToken)
	var listed []string
	for _, ty := range types.Data {
		listed = append(listed, ty.Kind)
		if ty.Schema != "/v3/event-types/"+ty.Kind+"/schema" || ty.Description == "" || ty.Group == "" || ty.Resource == "" {
			t.Errorf("GET /v3/event-types: %+v; want its group, what fires it, its resource and its schema's path", ty)
		}
	}
	if want := allKinds(t); !slices.Equal(listed, want) {
		t.Errorf("GET /v3/event-types lists %v; want %v", listed, want)
	}
	var unknownKind struct{ Detail string }
	c.call(404, "GET", "/v3/event-types/license.exploded/schema", nil, &unknownKind, noToken)
	if !strings.Contains(unknownKind.Detail, "license.created, license.updated") || !strings.Contains(unknownKind.Detail, "GET /v3/event-types") {
		t.Errorf("an unknown kind's 404 says %q; want the kinds named", unknownKind.Detail)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		c.call(200, "GET", path, nil, nil, noToken)
	}

	// Authentication and request framing.
	c.call(401, "GET", "/v3/account", nil, nil, noToken)
	c.call(401, "GET", "/v3/licenses", nil, nil, "Bearer hrld_not-a-token")
	c.call(415, "POST", "/v3/products", `name=x`, nil, "", "text/plain")
	c.call(413, "POST", "/v3/products", `{"name":"`+strings.Repeat("x", 1<<20)+`"}`, nil)
	c.call(400, "POST", "/v3/products", `{"name":`, nil)
	c.call(400, "POST", "/v3/users", `[1]`, nil)
	c.call(415, "POST", "/v3/products", "{\"name\":\"\xff\"}", nil)
	c.call(400, "POST", "/v3/products", `{"name":"a","metadata":{"k":1,"k":2}}`, nil)
	c.call(422, "POST", "/v3/products", `{"name":"a\u0000b"}`, nil)

	// Account.
	var acct map[string]any
	c.call(200, "GET", "/v3/account", nil, &acct)
	c.call(200, "PATCH", "/v3/account", map[string]any{"name": "Zoë's shop 🚀", "notificationEmail": "ops@example.com"}, &acct)
	c.call(422, "PATCH", "/v3/account", map[string]any{"notificationEmail": "Ops <ops@example.com>"}, nil)
	c.call(422, "PATCH", "/v3/account", map[string]any{}, nil)
	c.call(200, "PATCH", "/v3/account", map[string]any{"expiringSoonLeadSeconds": 3600}, &acct)
	c.call(422, "PATCH", "/v3/account", map[string]any{"expiringSoonLeadSeconds": 3599}, nil)
	c.call(422, "PATCH", "/v3/account", map[string]any{"expiringSoonLeadSeconds": 7776001}, nil)

	// API tokens: a read token reads and is refused changes; a revoked
	// token is refused at once.
	var readTok, writeTok map[string]any
	c.call(201, "POST", "/v3/api-tokens", map[string]any{"name": "CI ✓", "scope": "read", "expiresAt": "2099-01-01T00:00:00.5+01:00"}, &readTok)
	c.call(201, "POST", "/v3/api-tokens", map[string]any{"name": "deploy", "scope": "write", "expiresAt": nil}, &writeTok)
	c.call(422, "POST", "/v3/api-tokens", map[string]any{"name": " ", "scope": "admin", "expiresAt": "2001-01-01T00:00:00Z"}, nil)
	c.call(200, "GET", "/v3/api-tokens", nil, nil)
	c.call(200, "GET", "/v3/api-tokens?limit=1", nil, nil)
	c.call(422, "GET", "/v3/api-tokens?limit=0", nil, nil)
	asRead, asWrite := "Bearer "+readTok["token"].(string), "Bearer "+writeTok["token"].(string)
	c.call(200, "GET", "/v3/api-tokens", nil, nil, asRead)
	c.call(403, "PATCH", "/v3/account", map[string]any{"name": "x"}, nil, asRead)
	c.call(403, "POST", "/v3/api-tokens", map[string]any{"name": "x", "scope": "write"}, nil, asRead)
	c.call(403, "DELETE", "/v3/api-tokens/"+readTok["id"].(string), nil, nil, asRead)
	c.call(200, "GET", "/v3/account", nil, nil, asWrite)
	c.call(204, "DELETE", "/v3/api-tokens/"+writeTok["id"].(string), nil, nil, asWrite) // a token may revoke itself
	c.call(401, "GET", "/v3/account", nil, nil, asWrite)
	c.call(404, "DELETE", "/v3/api-tokens/"+writeTok["id"].(string), nil, nil)
	c.call(404, "DELETE", "/v3/api-tokens/not-a-uuid", nil, nil)

	// Webhooks.
	var hook, all map[string]any
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "CRM", "url": rcv.URL, "events": []string{"license.created", "license.deleted"}}, &hook)
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "All", "url": rcv.URL + "/all", "events": allKinds(t), "enabled": false, "token": "a-token-of-my-own-0123"}, &all)
	c.call(422, "POST", "/v3/webhooks", map[string]any{"name": "x", "url": "ftp://example.com", "events": []string{"license.exploded"}}, nil)
	// An ed25519 webhook: its public key listed without a token.
	var ed map[string]any
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "Ed", "url": rcv.URL + "/ed", "events": []string{"license.created"}, "enabled": false,
		"signatureScheme": "standard-webhooks-ed25519"}, &ed)
	var keys struct {
		Data []map[string]any `json:"data"`
	}
	c.call(200, "GET", "/v3/signing-keys?account="+acct["id"].(string), nil, &keys, noToken)
	if len(keys.Data) != 1 || keys.Data[0]["publicKey"] != ed["publicKey"] || keys.Data[0]["webhookId"] != ed["id"] {
		t.Errorf("GET /v3/signing-keys: %v; want the ed25519 webhook's publicKey %v", keys.Data, ed["publicKey"])
	}
	c.call(422, "GET", "/v3/signing-keys", nil, nil, noToken)
	c.call(404, "GET", "/v3/signing-keys?account="+missing, nil, nil, noToken)
	c.call(422, "POST", "/v3/webhooks", map[string]any{"name": "x", "url": rcv.URL, "events": []string{"license.created"},
		"signatureScheme": "standard-webhooks-ed25519", "token": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"}, nil)
	hid := hook["id"].(string)
	c.call(200, "GET", "/v3/webhooks", nil, nil)
	c.call(200, "GET", "/v3/webhooks?status=Healthy&limit=1", nil, nil)
	c.call(422, "GET", "/v3/webhooks?status=Sleepy", nil, nil)
	c.call(422, "GET", "/v3/webhooks?limit=501", nil, nil)
	c.call(200, "GET", "/v3/webhooks/"+hid, nil, nil)
	c.call(404, "GET", "/v3/webhooks/"+missing, nil, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"name": "CRM ✉️"}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"filter": map[string]any{"data.metadata.plan": map[string]any{"$in": []string{"pro"}}}}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+hid, map[string]any{"filter": map[string]any{"data.metadata.plan": map[string]any{"$in": "pro"}}}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"filter": nil}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"headers": map[string]string{"X-Api-Key": "k-123"}}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+hid, map[string]any{"headers": map[string]string{"Content-Type": "text/plain"}}, nil)
	c.call(200, "GET", "/v3/webhooks/"+hid+"?reveal=headers", nil, nil)
	c.call(422, "GET", "/v3/webhooks/"+hid+"?reveal=token", nil, nil)
	c.call(403, "GET", "/v3/webhooks/"+hid+"?reveal=headers", nil, nil, asRead)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"signatureScheme": "standard-webhooks"}, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"checkVerification": true}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+hid, map[string]any{"signatureScheme": "svix"}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"signatureScheme": "herald"}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"rateLimit": 50}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+hid, map[string]any{"rateLimit": 0}, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+hid, map[string]any{"rateLimit": nil}, nil)
	c.call(200, "POST", "/v3/webhooks/filter-test", map[string]any{"filter": map[string]any{"event": map[string]any{"$prefix": "license."}},
		"payload": map[string]any{"id": "x", "event": "license.created", "data": map[string]any{}, "triggeredAt": "2026-11-21T08:07:13.120Z"}}, nil)
	c.call(422, "POST", "/v3/webhooks/filter-test", map[string]any{"filter": map[string]any{"plan": "pro"}, "payload": map[string]any{}}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+hid, map[string]any{}, nil)
	c.call(404, "PATCH", "/v3/webhooks/"+missing, map[string]any{"name": "x"}, nil)
	c.call(200, "GET", "/v3/webhooks/"+hid+"/token", nil, nil)
	c.call(404, "GET", "/v3/webhooks/"+missing+"/token", nil, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/test", nil, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"event": "release.created", "checkVerification": true}, nil)
	c.call(422, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"event": "nope"}, nil)
	c.call(404, "POST", "/v3/webhooks/"+missing+"/test", nil, nil)

	// Token rotation: bad input and wrong states answer without changing
	// anything; then a rotation, a test under each token, and its finish.
	c.call(409, "POST", "/v3/webhooks/"+hid+"/token/rotate/finish", nil, nil)
	c.call(409, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"signWith": "next"}, nil)
	c.call(422, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"signWith": "old"}, nil)
	c.call(422, "POST", "/v3/webhooks/"+hid+"/token/rotate", map[string]any{"overlapSeconds": 59}, nil)
	c.call(404, "POST", "/v3/webhooks/"+missing+"/token/rotate", nil, nil)
	c.call(404, "POST", "/v3/webhooks/"+missing+"/token/rotate/finish", nil, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/token/rotate", map[string]any{"overlapSeconds": 3600}, nil)
	c.call(409, "POST", "/v3/webhooks/"+hid+"/token/rotate", nil, nil)
	c.call(200, "GET", "/v3/webhooks/"+hid+"/token", nil, nil)
	c.call(200, "GET", "/v3/webhooks/"+hid, nil, nil)
	c.call(200, "GET", "/v3/webhooks", nil, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"signWith": "current"}, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/test", map[string]any{"signWith": "next", "checkVerification": true}, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/token/rotate/finish", nil, nil)
	c.call(200, "POST", "/v3/webhooks/"+hid+"/token/rotate", nil, nil)

	// Products.
	var product, other map[string]any
	c.call(201, "POST", "/v3/products", map[string]any{"name": "Zoë's App", "metadata": map[string]any{"plan": "pro", "n": 12345678901234567}}, &product)
	c.call(201, "POST", "/v3/products", map[string]any{"name": "Other"}, &other)
	pid := product["id"].(string)
	c.call(422, "POST", "/v3/products", map[string]any{"name": ""}, nil)
	c.call(200, "GET", "/v3/products", nil, nil)
	c.call(200, "GET", "/v3/products?limit=1", nil, nil)
	c.call(422, "GET", "/v3/products?cursor=not-ours", nil, nil)
	c.call(200, "GET", "/v3/products/"+pid, nil, nil)
	c.call(404, "GET", "/v3/products/not-a-uuid", nil, nil)
	c.call(200, "PATCH", "/v3/products/"+pid, map[string]any{"metadata": map[string]any{"plan": "team"}}, nil)
	c.call(422, "PATCH", "/v3/products/"+pid, map[string]any{"name": nil}, nil)

	// Users.
	var user, user2 map[string]any
	c.call(201, "POST", "/v3/users", map[string]any{"email": "zoe@example.com", "name": "Zoë"}, &user)
	c.call(201, "POST", "/v3/users", map[string]any{"email": "ada@example.com"}, &user2)
	uid := user["id"].(string)
	c.call(409, "POST", "/v3/users", map[string]any{"email": "ZOE@example.com"}, nil)
	c.call(422, "POST", "/v3/users", map[string]any{"email": "nope"}, nil)
	c.call(200, "GET", "/v3/users", nil, nil)
	c.call(200, "GET", "/v3/users/"+uid, nil, nil)
	c.call(200, "PATCH", "/v3/users/"+uid, map[string]any{"name": nil}, nil)
	c.call(409, "PATCH", "/v3/users/"+uid, map[string]any{"email": "ada@example.com"}, nil)
	c.call(404, "PATCH", "/v3/users/"+missing, map[string]any{"name": "x"}, nil)

	// Licenses.
	var license, plain map[string]any
	c.call(201, "POST", "/v3/licenses", map[string]any{"productId": pid, "userId": uid, "validity": 31536000, "allowedActivations": 2,
		"metadata": map[string]any{"customer": "Zoë Müller 🚀"}}, &license)
	c.call(201, "POST", "/v3/licenses", map[string]any{"productId": strings.ToUpper(pid), "key": "MY-OWN-KEY-0001", "expiresAt": "2030-01-01T00:00:00+01:00", "userId": nil, "allowedActivations": nil, "validity": nil}, &plain)
	lid := license["id"].(string)
	c.call(409, "POST", "/v3/licenses", map[string]any{"productId": pid, "key": "MY-OWN-KEY-0001"}, nil)
	c.call(422, "POST", "/v3/licenses", map[string]any{"productId": missing}, nil)
	c.call(200, "GET", "/v3/licenses", nil, nil)
	c.call(200, "GET", "/v3/licenses?productId="+pid+"&userId="+uid+"&limit=10", nil, nil)
	c.call(422, "GET", "/v3/licenses?userId=nope", nil, nil)
	c.call(200, "GET", "/v3/licenses/"+lid, nil, nil)
	c.call(404, "GET", "/v3/licenses/"+missing, nil, nil)
	c.call(200, "PATCH", "/v3/licenses/"+lid, map[string]any{"metadata": map[string]any{}, "userId": user2["id"]}, nil)
	c.call(200, "PATCH", "/v3/licenses/"+plain["id"].(string), map[string]any{"validity": nil, "allowedActivations": nil, "userId": nil}, nil)
	c.call(422, "PATCH", "/v3/licenses/"+lid, map[string]any{"allowedActivations": 0}, nil)
	c.call(200, "POST", "/v3/licenses/"+lid+"/renew", nil, nil)
	c.call(422, "POST", "/v3/licenses/"+plain["id"].(string)+"/renew", nil, nil)
	c.call(404, "POST", "/v3/licenses/"+missing+"/renew", nil, nil)
	c.call(200, "PATCH", "/v3/licenses/"+lid+"/expires-at", map[string]any{"expiresAt": "2032-02-29T12:00:00.123456Z"}, nil)
	c.call(200, "PATCH", "/v3/licenses/"+plain["id"].(string)+"/expires-at", map[string]any{"expiresAt": nil}, nil)
	c.call(422, "PATCH", "/v3/licenses/"+lid+"/expires-at", map[string]any{"expiresAt": "soon"}, nil)
	c.call(404, "PATCH", "/v3/licenses/"+missing+"/expires-at", map[string]any{"expiresAt": nil}, nil)

	// Activations.
	var act map[string]any
	c.call(201, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "4c:32:75:9a:1e:0f", "hostname": "poste-de-zoë", "os": "linux"}, &act)
	c.call(201, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "fp-2", "hostname": nil}, nil)
	c.call(422, "POST", "/v3/activations", map[string]any{"licenseKey": license["key"], "fingerprint": "fp-3"}, nil) // at the limit
	c.call(201, "POST", "/v3/activations", map[string]any{"licenseKey": plain["key"], "fingerprint": "fp-x"}, nil)
	c.call(409, "POST", "/v3/activations", map[string]any{"licenseKey": plain["key"], "fingerprint": "fp-x"}, nil)
	c.call(422, "POST", "/v3/activations", map[string]any{"licenseKey": "NOPE", "fingerprint": "fp"}, nil)
	c.call(200, "GET", "/v3/activations", nil, nil)
	c.call(200, "GET", "/v3/activations?licenseId="+lid, nil, nil)
	c.call(200, "GET", "/v3/activations/"+act["id"].(string), nil, nil)
	c.call(404, "GET", "/v3/activations/"+missing, nil, nil)
	c.call(204, "DELETE", "/v3/activations/"+act["id"].(string), nil, nil)
	c.call(404, "DELETE", "/v3/activations/"+act["id"].(string), nil, nil)

	// Releases and their files.
	var release, file map[string]any
	c.call(201, "POST", "/v3/releases", map[string]any{"productId": pid, "version": "2.1.0"}, &release)
	rid := release["id"].(string)
	c.call(409, "POST", "/v3/releases", map[string]any{"productId": pid, "version": "2.1.0"}, nil)
	c.call(422, "POST", "/v3/releases", map[string]any{"productId": pid}, nil)
	c.call(201, "POST", "/v3/releases/"+rid+"/files", map[string]any{"filename": "app-2.1.0-linux-amd64.tar.gz", "size": 48213377,
		"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}, &file)
	c.call(201, "POST", "/v3/releases/"+rid+"/files", map[string]any{"filename": "notes.txt", "size": 0, "sha256": nil}, nil)
	c.call(409, "POST", "/v3/releases/"+rid+"/files", map[string]any{"filename": "notes.txt", "size": 1}, nil)
	c.call(422, "POST", "/v3/releases/"+rid+"/files", map[string]any{"filename": "x", "size": -1}, nil)
	c.call(404, "POST", "/v3/releases/"+missing+"/files", map[string]any{"filename": "x", "size": 1}, nil)
	c.call(200, "GET", "/v3/releases", nil, nil)
	c.call(200, "GET", "/v3/releases?productId="+pid, nil, nil)
	c.call(200, "GET", "/v3/releases/"+rid, nil, nil)
	c.call(204, "DELETE", "/v3/releases/"+rid+"/files/"+file["id"].(string), nil, nil)
	c.call(404, "DELETE", "/v3/releases/"+rid+"/files/"+file["id"].(string), nil, nil)
	c.call(204, "DELETE", "/v3/releases/"+rid, nil, nil)
	c.call(404, "GET", "/v3/releases/"+rid, nil, nil)

	// Trial activations.
	var trial map[string]any
	c.call(201, "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "4c:32:75:9a:1e:0f", "expiresAt": "2026-12-05T08:07:13.120Z"}, &trial)
	c.call(201, "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "fp-2"}, nil)
	c.call(409, "POST", "/v3/trial-activations", map[string]any{"productId": pid, "fingerprint": "fp-2"}, nil)
	c.call(422, "POST", "/v3/trial-activations", map[string]any{"productId": pid}, nil)
	c.call(200, "GET", "/v3/trial-activations", nil, nil)
	c.call(200, "GET", "/v3/trial-activations?productId="+pid+"&limit=1", nil, nil)
	c.call(200, "GET", "/v3/trial-activations/"+trial["id"].(string), nil, nil)
	c.call(204, "DELETE", "/v3/trial-activations/"+trial["id"].(string), nil, nil)
	c.call(404, "DELETE", "/v3/trial-activations/"+trial["id"].(string), nil, nil)

	// Event logs: the license.created delivery to the receiver.
	heraldtest.Eventually(t, 10*time.Second, "the license.created delivery", func() bool {
		var logs struct{ Data []map[string]any }
		c.call(200, "GET", "/v3/webhook-event-logs?webhookId="+hid+"&status=succeeded", nil, &logs)
		return len(logs.Data) >= 2
	})
	var logs, delivered struct{ Data []map[string]any }
	c.call(200, "GET", "/v3/webhook-event-logs?webhookId="+hid+"&status=succeeded", nil, &delivered)
	var withAttempt struct {
		Attempts []struct {
			Headers *struct {
				Request []struct{ Name, Value string }
			}
		}
	}
	c.call(200, "GET", "/v3/webhook-event-logs/"+delivered.Data[0]["id"].(string), nil, &withAttempt) // with an attempt and its headers
	if a := withAttempt.Attempts; len(a) == 0 || a[0].Headers == nil || !slices.ContainsFunc(a[0].Headers.Request, func(h struct{ Name, Value string }) bool {
		return h.Name == "webhook-signature" && h.Value != ""
	}) {
		t.Errorf("the delivered log's attempt shows no signature among its headers: %+v", a)
	}
	c.call(200, "GET", "/v3/webhook-event-logs", nil, &logs)
	c.call(200, "GET", "/v3/webhook-event-logs?event=license.created&limit=1", nil, nil)
	c.call(200, "GET", "/v3/webhook-event-logs?eventId="+logs.Data[0]["eventId"].(string), nil, nil)
	c.call(200, "GET", "/v3/webhook-event-logs?webhookId="+all["id"].(string)+"&status=cancelled", nil, nil)
	c.call(422, "GET", "/v3/webhook-event-logs?status=lost", nil, nil)
	c.call(200, "GET", "/v3/webhook-event-logs?status=failed&status=cancelled&since=2026-01-01T00:00:00Z&until="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), nil, nil)
	c.call(422, "GET", "/v3/webhook-event-logs?status=failed&status=lost", nil, nil)
	c.call(422, "GET", "/v3/webhook-event-logs?since=yesterday", nil, nil)
	c.call(422, "GET", "/v3/webhook-event-logs?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", nil, nil)
	logID := logs.Data[len(logs.Data)-1]["id"].(string)           // cancelled: its webhook is disabled
	c.call(200, "GET", "/v3/webhook-event-logs/"+logID, nil, nil) // with no attempt
	c.call(404, "GET", "/v3/webhook-event-logs/"+missing, nil, nil)
	c.call(409, "POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, nil) // a disabled webhook sends nothing
	c.call(200, "PATCH", "/v3/webhooks/"+all["id"].(string), map[string]any{"enabled": true}, nil)
	c.call(200, "POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, nil)
	c.call(404, "POST", "/v3/webhook-event-logs/"+missing+"/resend", nil, nil)

	// Ordered delivery: a failed event of an ordered webhook that holds is
	// skipped, once.
	bad := heraldtest.NewReceiver(t)
	bad.Status(500, "down")
	var ordered map[string]any
	c.call(422, "POST", "/v3/webhooks", map[string]any{"name": "Ordered", "url": bad.URL, "events": []string{"license.created"}, "ordering": "account"}, nil)
	c.call(422, "POST", "/v3/webhooks", map[string]any{"name": "Ordered", "url": bad.URL, "events": []string{"license.created"}, "orderingOnFailure": "wait"}, nil)
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "Ordered", "url": bad.URL, "events": []string{"license.created"},
		"ordering": "license", "orderingOnFailure": "hold",
		"retryPolicy": map[string]any{"maxAttempts": 1, "backoff": "fixed", "intervalSeconds": 60, "maxIntervalSeconds": 60}}, &ordered)
	if ordered["ordering"] != "license" || ordered["orderingOnFailure"] != "hold" {
		t.Errorf("created webhook's ordering %v on failure %v; want license, hold", ordered["ordering"], ordered["orderingOnFailure"])
	}
	oid := ordered["id"].(string)
	c.call(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, nil)
	var heldLog struct{ Data []map[string]any }
	heraldtest.Eventually(t, 30*time.Second, "the ordered webhook's failed log", func() bool {
		c.call(200, "GET", "/v3/webhook-event-logs?webhookId="+oid+"&status=failed", nil, &heldLog)
		return len(heldLog.Data) == 1
	})
	heldID := heldLog.Data[0]["id"].(string)
	c.call(200, "POST", "/v3/webhook-event-logs/"+heldID+"/skip", nil, nil)
	c.call(409, "POST", "/v3/webhook-event-logs/"+heldID+"/skip", nil, nil)
	c.call(404, "POST", "/v3/webhook-event-logs/"+missing+"/skip", nil, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+oid, map[string]any{"ordering": "none", "orderingOnFailure": "continue"}, nil)
	c.call(422, "PATCH", "/v3/webhooks/"+oid, map[string]any{"ordering": 1}, nil)
	c.call(204, "DELETE", "/v3/webhooks/"+oid, nil, nil)

	// Operator: accounts and portal links, with the operator token only.
	asOperator := "Bearer " + operatorToken
	var created, link map[string]any
	c.call(401, "GET", "/v3/operator/accounts", nil, nil)
	c.call(401, "GET", "/v3/operator/accounts", nil, nil, noToken)
	c.call(401, "GET", "/v3/account", nil, nil, asOperator)
	c.call(201, "POST", "/v3/operator/accounts", map[string]any{"name": "Zoë's second shop", "ownerEmail": "zoe@example.com"}, &created, asOperator)
	c.call(409, "POST", "/v3/operator/accounts", map[string]any{"name": "Again", "ownerEmail": "zoe@example.com"}, nil, asOperator)
	c.call(422, "POST", "/v3/operator/accounts", map[string]any{"name": "", "ownerEmail": "not an address", "notificationEmail": "x"}, nil, asOperator)
	c.call(400, "POST", "/v3/operator/accounts", `{"name":`, nil, asOperator)
	c.call(200, "GET", "/v3/operator/accounts?limit=1", nil, nil, asOperator)
	c.call(422, "GET", "/v3/operator/accounts?limit=0", nil, nil, asOperator)
	newID := created["account"].(map[string]any)["id"].(string)
	c.call(200, "GET", "/v3/account", nil, nil, "Bearer "+created["apiToken"].(string))
	c.call(200, "POST", "/v3/operator/accounts/"+newID+"/portal-link", map[string]any{"ttlSeconds": 60}, &link, asOperator)
	c.call(200, "POST", "/v3/operator/accounts/"+newID+"/portal-link", nil, nil, asOperator)
	c.call(422, "POST", "/v3/operator/accounts/"+newID+"/portal-link", map[string]any{"ttlSeconds": 5}, nil, asOperator)
	c.call(404, "POST", "/v3/operator/accounts/"+missing+"/portal-link", nil, nil, asOperator)
	c.call(200, "PATCH", "/v3/operator/accounts/"+newID, map[string]any{"limits": map[string]any{"webhooks": 10, "apiRequestsPerSecond": nil}}, nil, asOperator)
	c.call(422, "PATCH", "/v3/operator/accounts/"+newID, map[string]any{"limits": map[string]any{"webhooks": 0}}, nil, asOperator)
	c.call(404, "PATCH", "/v3/operator/accounts/"+missing, map[string]any{"limits": map[string]any{"webhooks": 1}}, nil, asOperator)
	c.call(204, "DELETE", "/v3/operator/accounts/"+newID, nil, nil, asOperator)
	c.call(404, "DELETE", "/v3/operator/accounts/"+newID, nil, nil, asOperator)
	c.call(401, "GET", "/v3/account", nil, nil, "Bearer "+created["apiToken"].(string))

	// Recovery: a webhook whose receiver fails is suspended by its first
	// failed event; the next event is cancelled while it is suspended.
	down := heraldtest.NewReceiver(t)
	down.Status(500, "down")
	var dh map[string]any
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "Down", "url": down.URL, "events": []string{"license.created"}}, &dh)
	did := dh["id"].(string)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	c.call(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, nil)
	heraldtest.Eventually(t, 30*time.Second, "the failing webhook suspended", func() bool {
		var w map[string]any
		c.call(200, "GET", "/v3/webhooks/"+did, nil, &w)
		return w["status"] == "Suspended"
	})
	c.call(201, "POST", "/v3/licenses", map[string]any{"productId": pid}, nil)
	// The suspension's email, kept (no SMTP server here), read back.
	heraldtest.Eventually(t, 30*time.Second, "the suspension email kept", func() bool {
		var emails struct{ Data []map[string]any }
		c.call(200, "GET", "/v3/emails", nil, &emails)
		return len(emails.Data) > 0 && emails.Data[0]["status"] == "kept"
	})
	c.call(200, "GET", "/v3/emails?limit=1", nil, nil)
	c.call(422, "GET", "/v3/emails?limit=0", nil, nil)
	recoverPath := "/v3/webhooks/" + did + "/recover"
	c.call(422, "POST", recoverPath, map[string]any{"dryRun": true}, nil)
	c.call(422, "POST", recoverPath, map[string]any{"since": "yesterday", "statuses": []string{"succeeded"}}, nil)
	c.call(422, "POST", recoverPath, map[string]any{"since": since, "until": since}, nil)
	c.call(404, "POST", "/v3/webhooks/"+missing+"/recover", map[string]any{"since": since}, nil)
	var count map[string]any
	c.call(200, "POST", recoverPath, map[string]any{"since": since, "dryRun": true}, &count)
	var downHook map[string]any
	c.call(200, "GET", "/v3/webhooks/"+did, nil, &downHook)
	if downHook["undeliveredCount"] != float64(2) {
		t.Errorf("suspended webhook's undeliveredCount %v; want 2", downHook["undeliveredCount"])
	}
	var undelivered struct{ Data []map[string]any }
	c.call(200, "GET", "/v3/webhook-event-logs?webhookId="+did+"&status=failed&status=cancelled&since="+since, nil, &undelivered)
	if len(undelivered.Data) != 2 {
		t.Errorf("%d failed or cancelled logs listed; want 2", len(undelivered.Data))
	}
	if count["count"] != float64(2) {
		t.Errorf("dry run counted %v; want 2 (one failed, one cancelled while suspended)", count["count"])
	}
	// The receiver holds the resends, so the recovery is still running
	// when it is cancelled.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	down.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	var rec map[string]any
	c.call(202, "POST", recoverPath, map[string]any{"since": since, "until": time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano),
		"statuses": []string{"failed", "cancelled"}}, &rec)
	recPath := "/v3/webhooks/" + did + "/recoveries/" + rec["id"].(string)
	c.call(409, "POST", recoverPath, map[string]any{"since": since}, nil) // one is running
	c.call(200, "GET", "/v3/webhooks/"+did+"/recoveries", nil, nil)
	c.call(200, "GET", "/v3/webhooks/"+did+"/recoveries?limit=1", nil, nil)
	c.call(404, "GET", "/v3/webhooks/"+missing+"/recoveries", nil, nil)
	c.call(200, "GET", recPath, nil, nil)
	c.call(404, "GET", "/v3/webhooks/"+did+"/recoveries/"+missing, nil, nil)
	c.call(200, "DELETE", recPath, nil, &rec)
	if rec["status"] != "cancelled" {
		t.Errorf("cancelled recovery's status %v", rec["status"])
	}
	c.call(409, "DELETE", recPath, nil, nil)
	c.call(200, "PATCH", "/v3/webhooks/"+did, map[string]any{"enabled": false}, nil)
	c.call(409, "POST", recoverPath, map[string]any{"since": since, "dryRun": true}, nil) // a disabled webhook sends nothing

	// A pull webhook: a pull token, its events read (waiting for one) and
	// acknowledged.
	var pullHook, pullToken map[string]any
	c.call(422, "POST", "/v3/webhooks", map[string]any{"name": "pull", "type": "pull", "url": rcv.URL, "events": []string{"product.created"}}, nil)
	c.call(201, "POST", "/v3/webhooks", map[string]any{"name": "pull", "type": "pull", "events": []string{"product.created"}}, &pullHook)
	pullID := pullHook["id"].(string)
	c.call(201, "POST", "/v3/webhooks/"+pullID+"/pull-tokens", nil, &pullToken)
	c.call(409, "POST", "/v3/webhooks/"+hid+"/pull-tokens", nil, nil)
	c.call(404, "POST", "/v3/webhooks/"+missing+"/pull-tokens", nil, nil)
	c.call(201, "POST", "/v3/products", map[string]any{"name": "Pulled"}, nil)
	bearer := "Bearer " + pullToken["token"].(string)
	var pulled struct {
		Data   []map[string]any
		Cursor string
	}
	c.call(200, "GET", "/v3/webhooks/"+pullID+"/events?limit=10&waitSeconds=5", nil, &pulled, bearer)
	if len(pulled.Data) != 1 {
		t.Fatalf("GET …/events: %d events; want the product's", len(pulled.Data))
	}
	c.call(422, "GET", "/v3/webhooks/"+pullID+"/events?limit=0", nil, nil, bearer)
	c.call(403, "GET", "/v3/webhooks/"+pullID+"/token", nil, nil, bearer)
	c.call(404, "GET", "/v3/webhooks/"+hid+"/events", nil, nil, bearer)
	c.call(409, "GET", "/v3/webhooks/"+hid+"/events", nil, nil)
	c.call(422, "POST", "/v3/webhooks/"+pullID+"/events/ack", map[string]any{"cursor": "99"}, nil, bearer)
	c.call(200, "POST", "/v3/webhooks/"+pullID+"/events/ack", map[string]any{"cursor": pulled.Cursor}, nil, bearer)

	// Deletions last, each firing its event (or, for cascades, none).
	c.call(204, "DELETE", "/v3/licenses/"+plain["id"].(string), nil, nil)
	c.call(404, "DELETE", "/v3/licenses/"+plain["id"].(string), nil, nil)
	c.call(204, "DELETE", "/v3/users/"+uid, nil, nil)
	c.call(404, "DELETE", "/v3/users/"+uid, nil, nil)
	c.call(204, "DELETE", "/v3/products/"+other["id"].(string), nil, nil)
	c.call(204, "DELETE", "/v3/products/"+pid, nil, nil)
	c.call(404, "DELETE", "/v3/products/"+pid, nil, nil)
	c.call(204, "DELETE", "/v3/webhooks/"+hid, nil, nil)
	c.call(404, "DELETE", "/v3/webhooks/"+hid, nil, nil)

	// Every operation of the document was called, and answered 2xx once.
	d, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	cov.mu.Lock()
	defer cov.mu.Unlock()
	for path, item := range d.Paths.Map() {
		for method, op := range item.Operations() {
			if !slices.ContainsFunc(cov.seen[op.OperationID], func(s int) bool { return s >= 200 && s < 300 }) {
				t.Errorf("%s %s (%s): never answered 2xx in this test (answers: %v)", method, path, op.OperationID, cov.seen[op.OperationID])
			}
		}
	}
}

const (
	operatorToken = "operator-token-0123456789abcdef0123456789"
	missing       = "01937a4f-2b3c-7d4e-9f5a-6b7c8d9e0f1a"
	noToken       = "-"
)

// client sends requests through the herald's checking transport.
type client struct {
	t *testing.T
	h *heraldtest.Herald
}

// call sends a request and fails the test unless it answers want. opts
// are, in order: the Authorization header ("" for the herald's token,
// noToken for none) and the Content-Type ("" for JSON).
func (c client) call(want int, method, path string, body, out any, opts ...string) {
	c.t.Helper()
	authz, ctype := "Bearer "+c.h.Token, "application/json"
	if len(opts) > 0 && opts[0] != "" {
		authz = opts[0]
	}
	if len(opts) > 1 && opts[1] != "" {
		ctype = opts[1]
	}
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.h.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if authz != noToken {
		req.Header.Set("Authorization", authz)
	}
	resp, err := c.h.Client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != want {
		c.t.Errorf("%s %s: %d; want %d\n%s", method, path, resp.StatusCode, want, clip(data))
		return
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func clip(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "…"
	}
	return string(b)
}

func allKinds(t *testing.T) []string {
	d, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range d.Components.Schemas["EventKind"].Value.Enum {
		out = append(out, k.(string))
	}
	return out
}
