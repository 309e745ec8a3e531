package nats_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/nats"
)

// server is the NATS server with JetStream these machines run (.ci/run
// starts it).
const server = "nats://127.0.0.1:4222"

// stream makes a JetStream stream capturing subject.>, removed at the end
// of the test, and returns the subject prefix and the stream.
func stream(t *testing.T) (string, jetstream.Stream) {
	t.Helper()
	destinationtest.Broker(t, "127.0.0.1:4222", "NATS")
	conn, err := natsgo.Connect(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("HERALD_TEST_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatalf("create stream (is JetStream on?): %v", err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	return strings.ToLower(name), s
}

// TestAnAcknowledgedMessageIsTheSignedEvent: what herald publishes is
// acknowledged by the stream, and a consumer gets the exact body with
// headers the Standard Webhooks library verifies.
func TestAnAcknowledgedMessageIsTheSignedEvent(t *testing.T) {
	t.Parallel()
	prefix, s := stream(t)
	cl, err := destinationtest.Open(t, nats.New(), destination.Config{"url": server, "subject": prefix + ".licensing"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000011", "L1")
	res := destinationtest.Publish(t, cl, m)
	if !res.OK() || !strings.Contains(res.Answer, "sequence 1") {
		t.Fatalf("publish: %+v; want the stream's acknowledgement", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	headers := map[string]string{}
	for k, v := range got.Headers() {
		headers[k] = v[0]
	}
	destinationtest.Verify(t, got.Data(), headers, m)
}

// TestARetryIsOneMessageAndAResendAnother: a retry of a publish the stream
// took (the same DedupID, its log's id) is acknowledged as a duplicate
// and kept once; a resend (a DedupID of its own) is a second message.
func TestARetryIsOneMessageAndAResendAnother(t *testing.T) {
	t.Parallel()
	prefix, s := stream(t)
	cl, err := destinationtest.Open(t, nats.New(), destination.Config{"url": server, "subject": prefix + ".licensing"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000012", "L1")
	resent := m
	resent.DedupID = "0193b7a0-0000-7000-8000-000000000019"
	for i, c := range []struct {
		m   destination.Message
		dup bool
	}{{m, false}, {m, true}, {resent, false}} {
		res := destinationtest.Publish(t, cl, c.m)
		if !res.OK() || strings.Contains(res.Answer, "duplicate") != c.dup {
			t.Fatalf("publish %d: %+v; want it acknowledged, a duplicate: %v", i, res, c.dup)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("the stream holds %d messages; want 2 (the event once, its resend once)", info.State.Msgs)
	}
}

// TestAStreamsRefusalIsAFailedAttempt: a subject no stream captures, a
// message over the server's limit and an address the outbound guard
// refuses each fail with a reason a person can act on.
func TestAStreamsRefusalIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	prefix, _ := stream(t)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000012", "L1")
	nowhere, err := destinationtest.Open(t, nats.New(), destination.Config{"url": server, "subject": "herald-nobody-" + prefix}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := destinationtest.Publish(t, nowhere, m); res.Failure != "unroutable" || !strings.Contains(res.Err, "no JetStream stream captures") {
		t.Errorf("uncaptured subject: %+v; want a failure saying no stream captures it", res)
	}
	big := m
	big.Body = []byte(strings.Repeat("x", 8<<20))
	capturing, err := destinationtest.Open(t, nats.New(), destination.Config{"url": server, "subject": prefix + ".big"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := destinationtest.Publish(t, capturing, big); res.Failure != "too_large" {
		t.Errorf("8 MiB message: %+v; want too_large", res)
	}
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("address refused by policy")
	}
	if _, err := destinationtest.Open(t, nats.New(), destination.Config{"url": server, "subject": prefix + ".x"}, refuse); err == nil || !strings.Contains(err.Error(), "refused by policy") {
		t.Errorf("guarded dial: %v; want the guard's refusal", err)
	}
}
