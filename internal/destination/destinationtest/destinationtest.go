// Package destinationtest owns what the destination types' tests share: a
// signed message as the dispatcher makes one, a client opened and a
// message published within a bound, a consumed message's verification with the
// Standard Webhooks project's own Go library (code herald did not write),
// and the check that a broker on loopback is there (a skip on a developer's
// machine, a failure under CI).
package destinationtest

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/testdb"
	"github.com/heraldhq/herald/webhook"
)

// Secret signs Message's messages.
const Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Message returns a signed license.created message about license, as the
// dispatcher hands it to a type: the exact body, the Standard Webhooks
// headers, the kind, and the license as its key.
func Message(t testing.TB, id, license string) destination.Message {
	t.Helper()
	body := []byte(`{"id":"` + id + `","event":"license.created","data":{"id":"` + license + `","key":"ÄBC-😀"},"triggeredAt":"2026-11-29T10:00:00.000Z"}`)
	ts := time.Now().Unix()
	return destination.Message{EventID: id, DedupID: id, Kind: "license.created", Body: body, Key: license, Headers: []destination.Header{
		{Name: webhook.IDHeader, Value: id},
		{Name: webhook.TimestampHeader, Value: strconv.FormatInt(ts, 10)},
		{Name: webhook.SignatureHeader, Value: webhook.SignStandard(Secret, id, ts, body)},
		{Name: destination.EventHeader, Value: "license.created"},
		{Name: "content-type", Value: "application/json; charset=utf-8"},
	}}
}

// Verify fails the test unless a consumed message's body and headers
// verify with the Standard Webhooks library, and carry the event's kind.
func Verify(t testing.TB, body []byte, headers map[string]string, want destination.Message) {
	t.Helper()
	VerifyWith(t, Secret, body, headers, want)
}

// VerifyWith is Verify for a message signed with secret (a webhook's token).
func VerifyWith(t testing.TB, secret string, body []byte, headers map[string]string, want destination.Message) {
	t.Helper()
	if string(body) != string(want.Body) {
		t.Errorf("consumed body %q; want the exact bytes %q", body, want.Body)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("the Standard Webhooks library refused the consumed message (headers %v): %v", headers, err)
	}
	if got := headers[destination.EventHeader]; got != want.Kind {
		t.Errorf("%s header %q; want %q", destination.EventHeader, got, want.Kind)
	}
}

// Broker checks that a broker listens at addr on loopback: a skip when it
// does not, a failure under CI (testdb.SkipUnless).
func Broker(t testing.TB, addr, what string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
	}
	testdb.SkipUnless(t, err == nil, what+" is not listening on "+addr)
}

// Dial is how a test's client reaches its broker: nil for a plain dial, or
// a guarded one (netguard) to see a refusal.
type Dial = func(ctx context.Context, network, addr string) (net.Conn, error)

// Open opens a client of typ for c, giving it 20 seconds to connect, and
// closes it when the test ends.
func Open(t testing.TB, typ destination.Type, c destination.Config, dial Dial) (destination.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := typ.Open(ctx, c, destination.Env{Dial: dial, Timeout: 20 * time.Second})
	if err == nil {
		t.Cleanup(func() { cl.Close() })
	}
	return cl, err
}

// Publish publishes m, giving the broker 20 seconds to answer.
func Publish(t testing.TB, cl destination.Client, m destination.Message) destination.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.Publish(ctx, m)
}
