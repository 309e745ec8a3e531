package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/server"
	"github.com/heraldhq/herald/internal/store"
)

// fuzzRoutes are the API calls that read a body, one per body type. The
// placeholders in a path or body are replaced with ids of resources that
// exist (see fuzzAPI), so that mutations of a valid body reach the
// licensing and store code rather than stopping at a 404.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v3/webhooks"},
	{"PATCH", "/v3/webhooks/{webhook}"},
	{"POST", "/v3/webhooks/{testWebhook}/test"},
	{"PATCH", "/v3/account"},
	{"POST", "/v3/products"},
	{"PATCH", "/v3/products/{product}"},
	{"POST", "/v3/users"},
	{"PATCH", "/v3/users/{user}"},
	{"POST", "/v3/licenses"},
	{"PATCH", "/v3/licenses/{license}"},
	{"POST", "/v3/licenses/{license}/renew"},
	{"PATCH", "/v3/licenses/{license}/expires-at"},
	{"POST", "/v3/activations"},
	{"POST", "/v3/releases"},
	{"POST", "/v3/releases/{release}/files"},
	{"POST", "/v3/trial-activations"},
}

// FuzzAPIBody sends any body, under any Content-Type, to the API call its
// first byte picks, through the whole herald handler, and wants an answer
// below 500: bad input is the client's fault, never the server's.
func FuzzAPIBody(f *testing.F) {
	h := openFuzzAPI(f)
	seeds := map[int][]string{
		0: {`{"name":"CRM","url":"https://example.com/hooks","events":["license.created"]}`,
			`{"name":"CRM","url":"https://example.com/hooks","events":["license.created","product.created"],"enabled":false,"token":"whsec_0123456789abcdef"}`,
			`{"name":"CRM","url":"http://169.254.169.254/","events":["license.created"]}`,
			`{"name":"a","name":"b","url":"https://example.com/","events":["license.created"]}`},
		1: {`{"name":"renamed"}`, `{"enabled":false}`, `{"events":[]}`, `{"url":null}`, `{"token":"short"}`},
		2: {``, `{}`, `{"event":"license.renewed","checkVerification":true}`, `{"event":"nope"}`, `{"event":null}`},
		3: {`{"name":"Acme"}`, `{"notificationEmail":"ops@example.com"}`, `{"name":"","notificationEmail":"not an email"}`},
		4: {`{"name":"Pro","metadata":{"tier":"gold"}}`, `{"name":"P","metadata":[]}`, `{"name":"P","metadata":"x"}`},
		5: {`{"name":"Pro 2"}`, `{"metadata":{"a":{"b":{"c":[1,2,3]}}}}`, `{"name":null}`},
		6: {`{"email":"u2@example.com","name":"Zoë"}`, `{"email":"not an email"}`},
		7: {`{"name":"renamed"}`, `{"email":"{user}"}`},
		8: {`{"productId":"{product}","userId":"{user}","validity":30,"allowedActivations":3,"metadata":{"customer":"Zoë"}}`,
			`{"productId":"{product}","key":"ABCD-1234","expiresAt":"2030-01-01T00:00:00.000Z"}`,
			`{"productId":"{product}","validity":-1}`, `{"productId":"{product}","validity":1e999}`,
			`{"productId":"{product}","allowedActivations":9223372036854775808}`},
		9:  {`{"userId":null,"validity":null}`, `{"metadata":{"k":"\u2028"}}`, `{}`},
		10: {``, `{}`},
		11: {`{"expiresAt":"2031-02-03T04:05:06.789Z"}`, `{"expiresAt":null}`, `{"expiresAt":"yesterday"}`, `{"expiresAt":"2199-12-31T23:59:59.999Z"}`, `{"expiresAt":"9999-12-31T23:59:59.999Z"}`},
		12: {`{"licenseKey":"{licenseKey}","fingerprint":"fp-1","hostname":"h","os":"linux"}`, `{"licenseKey":"nope","fingerprint":""}`},
		13: {`{"productId":"{product}","version":"1.2.3"}`, `{"productId":"{product}","version":""}`},
		14: {`{"filename":"app.zip","size":1024,"sha256":"` + strings.Repeat("ab", 32) + `"}`, `{"filename":"x","size":-1,"sha256":"XYZ"}`},
		15: {`{"productId":"{product}","fingerprint":"fp-1"}`, `{"productId":"{product}","fingerprint":"fp-2","expiresAt":"2030-01-01T00:00:00.000Z"}`},
	}
	// Metadata at the depths around its limit: 62 levels (accepted), 63
	// (the body's walk lets it through, the metadata rule refuses it) and
	// 64 (the walk refuses the body).
	for _, levels := range []int{62, 63, 64} {
		meta := strings.Repeat(`{"a":`, levels-1) + `{}` + strings.Repeat("}", levels-1)
		seeds[4] = append(seeds[4], `{"name":"Deep","metadata":`+meta+`}`)
		seeds[9] = append(seeds[9], `{"metadata":`+meta+`}`)
	}
	for route, bodies := range seeds {
		for _, b := range bodies {
			f.Add(uint8(route), "application/json", []byte(b))
		}
	}
	// Bodies that are wrong in the same way for every call.
	for route := range fuzzRoutes {
		for _, s := range []struct{ ct, body string }{
			{"application/json", ""},
			{"application/json", "null"},
			{"application/json", "[]"},
			{"application/json", `[{"name":"x"}]`},
			{"application/json", `"string"`},
			{"application/json", "1e999"},
			{"application/json", `{"name":"x"} {"name":"y"}`},
			{"application/json", `{"name":"x"`},
			{"application/json", `{"name":"a\u0000b"}`},
			{"application/json", `{"email":"a\u0000b@example.com"}`},
			{"application/json", "{\"name\":\"a\x00b\"}"},
			{"application/json", "{\"name\":\"\xff\xfe\"}"},
			{"application/json", `{"name":"\ud800"}`},
			{"application/json", `{"unknown":1}`},
			{"application/json", strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
			{"application/json", strings.Repeat("[", 65) + strings.Repeat("]", 65)},
			{"application/json", `{"name":"x","metadata":{"k":` + strings.Repeat(`[{"a":`, 40) + strings.Repeat("}]", 40) + `}}`},
			{"application/json", `{"name":"x","metadata":{` + strings.TrimSuffix(strings.Repeat(`"k":0,`, 2000), ",") + `}}`},
			{"application/json", `{"name":"x","metadata":{"s":"` + strings.Repeat(`\u0000\"`, 1000) + `","n":1` + strings.Repeat("0", 2000) + `}}`},
			{"application/json", `{"metadata":` + strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000) + `}`},
			{"application/json; charset=latin1", `{}`},
			{"application/merge-patch+json", `{}`},
			{"", `{}`},
			{"text/plain", `{}`},
			{"application/json;;", `{}`},
		} {
			f.Add(uint8(route), s.ct, []byte(s.body))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, contentType string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(r.method, h.ids.Replace(r.path), bytes.NewReader([]byte(h.ids.Replace(string(body)))))
		req.Header.Set("Authorization", "Bearer "+h.token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s\nlog:\n%s", r.method, req.URL.Path, body, rec.Code, rec.Body, h.log)
		}
	})
}

type fuzzAPI struct {
	handler http.Handler
	token   string
	ids     *strings.Replacer
	log     *heraldtest.Output
}

// openFuzzAPI opens one herald for a whole fuzz run (on SQLite unless
// heraldtest.FuzzEngineEnv says postgres), with the outbound guard on, and
// creates the resources the routes name. Nothing runs in the background:
// the dispatcher is not started, so no event is delivered, and the one
// webhook Test is sent to points at loopback, which the guard refuses at
// connect time, so the fuzzer sends nothing anywhere.
func openFuzzAPI(f *testing.F) *fuzzAPI {
	f.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	h := &fuzzAPI{token: auth.NewAPIToken(), log: &heraldtest.Output{}}
	srv, err := server.Open(context.Background(), server.Config{
		DatabaseURL: heraldtest.FuzzDatabaseURL(f), SecretKey: key,
		BootstrapEmail: "owner@example.com", BootstrapPassword: "correct horse battery staple", BootstrapToken: h.token,
		RateLimit: -1, RateLimitAnonymous: -1, // fuzzing finds bad answers, not rates
		Logger: slog.New(slog.NewTextHandler(h.log, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Store.Close() })
	h.handler = srv.Handler()

	create := func(path, body string) map[string]any {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		var out map[string]any
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			f.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
		return out
	}
	product := create("/v3/products", `{"name":"Pro"}`)["id"].(string)
	user := create("/v3/users", `{"email":"user@example.com"}`)["id"].(string)
	license := create("/v3/licenses", `{"productId":"`+product+`","userId":"`+user+`","validity":30}`)
	release := create("/v3/releases", `{"productId":"`+product+`","version":"1.0.0"}`)["id"].(string)
	hook := create("/v3/webhooks", `{"name":"CRM","url":"https://example.com/hooks","events":["license.created"]}`)["id"].(string)

	acct, err := srv.Store.AccountByTokenHash(context.Background(), auth.HashToken(h.token))
	if err != nil {
		f.Fatal(err)
	}
	testHook, err := srv.Store.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{
		Name: "loopback", URL: "http://127.0.0.1:9/", Events: []event.Kind{event.LicenseCreated},
		Enabled: true, Token: auth.NewWebhookToken(),
	})
	if err != nil {
		f.Fatal(err)
	}
	h.ids = strings.NewReplacer("{product}", product, "{user}", user, "{license}", license["id"].(string),
		"{licenseKey}", license["key"].(string), "{release}", release, "{webhook}", hook, "{testWebhook}", testHook.ID)
	return h
}
