package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/kafka"
)

// cluster starts franz-go's in-process Kafka (kfake, speaking the Kafka
// protocol on loopback) with topic "licensing" of 8 partitions, stopped at
// the end of the test.
func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(8, "licensing")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func brokers(c *kfake.Cluster) []any {
	var out []any
	for _, a := range c.ListenAddrs() {
		out = append(out, a)
	}
	return out
}

// TestARecordIsTheSignedEventKeyedByLicense: each record is acknowledged
// (acks=all), keyed by its license, so one license's events share a
// partition in their order; a consumer gets the exact body with headers
// the Standard Webhooks library verifies.
func TestARecordIsTheSignedEventKeyedByLicense(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	cl, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(c), "topic": "licensing"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sent []destination.Message
	for i, license := range []string{"L1", "L2", "L1", "L3", "L1"} {
		m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-00000000002"+string(rune('0'+i)), license)
		if res := destinationtest.Publish(t, cl, m); !res.OK() || !strings.Contains(res.Answer, "in-sync replicas") {
			t.Fatalf("publish %d: %+v", i, res)
		}
		sent = append(sent, m)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("licensing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < len(sent) {
		f := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d", len(got), len(sent))
		}
		got = append(got, f.Records()...)
	}
	partitionOf := map[string]int32{}
	var l1 []string
	for _, r := range got {
		var want destination.Message
		for _, m := range sent {
			if string(m.Body) == string(r.Value) {
				want = m
			}
		}
		headers := map[string]string{}
		for _, h := range r.Headers {
			headers[h.Key] = string(h.Value)
		}
		destinationtest.Verify(t, r.Value, headers, want)
		if string(r.Key) != want.Key {
			t.Errorf("record key %q; want the license %q", r.Key, want.Key)
		}
		if p, ok := partitionOf[want.Key]; ok && p != r.Partition {
			t.Errorf("license %s in partitions %d and %d; want one", want.Key, p, r.Partition)
		}
		partitionOf[want.Key] = r.Partition
		if want.Key == "L1" {
			l1 = append(l1, want.EventID)
		}
	}
	if want := []string{sent[0].EventID, sent[2].EventID, sent[4].EventID}; strings.Join(l1, ",") != strings.Join(want, ",") {
		t.Errorf("license L1's records in order %v; want %v", l1, want)
	}
}

// TestABrokersRefusalIsAFailedAttempt: a topic that does not exist, a
// record over the broker's limit, a wrong SASL password and an address the
// outbound guard refuses each fail with a reason a person can act on.
func TestABrokersRefusalIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	c := cluster(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4096"}))
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000031", "L1")

	missing, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(c), "topic": "nowhere"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := destinationtest.Publish(t, missing, m); res.Failure != "not_found" || !strings.Contains(res.Err, "does not exist") {
		t.Errorf("missing topic: %+v; want a failure saying it does not exist", res)
	}

	cl, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(c), "topic": "licensing"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := m
	// Random, so no compression brings it under the limit.
	noise := make([]byte, 64<<10)
	rand.Read(noise)
	big.Body = []byte(base64.StdEncoding.EncodeToString(noise))
	if res := destinationtest.Publish(t, cl, big); res.Failure != "too_large" {
		t.Errorf("a record over message.max.bytes: %+v; want too_large", res)
	}
	if res := destinationtest.Publish(t, cl, m); !res.OK() {
		t.Errorf("after a refusal the client still produces: %+v", res)
	}

	secured := cluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "herald", "right"))
	if _, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(secured), "topic": "licensing",
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "herald", "password": "wrong"}}, nil); err == nil || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong SASL password: %v; want a refusal, without the password", err)
	}
	ok, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(secured), "topic": "licensing",
		"sasl": map[string]any{"mechanism": "PLAIN", "username": "herald", "password": "right"}}, nil)
	if err != nil {
		t.Fatalf("right SASL password: %v", err)
	}
	if res := destinationtest.Publish(t, ok, m); !res.OK() {
		t.Errorf("produce with SASL: %+v", res)
	}

	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("address refused by policy")
	}
	if _, err := destinationtest.Open(t, kafka.New(), destination.Config{"brokers": brokers(c), "topic": "licensing"}, refuse); err == nil || !strings.Contains(err.Error(), "refused by policy") {
		t.Errorf("guarded dial: %v; want the guard's refusal", err)
	}
}
