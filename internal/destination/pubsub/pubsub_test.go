package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	ps "cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/pubsub"
	"github.com/heraldhq/herald/internal/testdb"
)

// emulatorPath is where Debian's google-cloud-cli-pubsub-emulator puts the
// Pub/Sub emulator.
const emulatorPath = "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator"

var (
	emulatorOnce sync.Once
	emulatorAddr string
	emulatorErr  error
)

// emulator starts Google's Pub/Sub emulator on a free loopback port, once
// for the package's tests (it takes seconds to start), and stops it when
// they end (TestMain).
func emulator(t *testing.T) string {
	t.Helper()
	_, err := os.Stat(emulatorPath)
	testdb.SkipUnless(t, err == nil, "the Pub/Sub emulator is not installed (apt-get install google-cloud-cli-pubsub-emulator)")
	emulatorOnce.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			emulatorErr = err
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cmd := exec.Command(emulatorPath, "--host=127.0.0.1", fmt.Sprintf("--port=%d", port))
		// Its log (Java stack traces of cancelled calls among it) is noise
		// here; a failure shows in the calls' answers.
		if emulatorErr = cmd.Start(); emulatorErr != nil {
			return
		}
		stop = func() { cmd.Process.Kill(); cmd.Wait() }
		emulatorAddr = fmt.Sprintf("127.0.0.1:%d", port)
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if c, err := net.Dial("tcp", emulatorAddr); err == nil {
				c.Close()
				return
			}
		}
		emulatorErr = errors.New("the Pub/Sub emulator did not listen within 90 s")
	})
	if emulatorErr != nil {
		t.Fatal(emulatorErr)
	}
	return emulatorAddr
}

var stop = func() {}

func TestMain(m *testing.M) {
	code := m.Run()
	stop()
	os.Exit(code)
}

// topic makes a topic and a subscription with ordering on the emulator.
func topic(t *testing.T, addr, project string) (string, *ps.Subscriber) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ps.NewClient(context.Background(), project, option.WithEndpoint(addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	name := fmt.Sprintf("herald-%d", time.Now().UnixNano())
	tp, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/" + project + "/topics/" + name})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	sub, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/" + project + "/subscriptions/" + name,
		Topic: tp.Name, EnableMessageOrdering: true})
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	return name, c.Subscriber(sub.Name)
}

// open opens a client of the pubsub type, which the test needs.
func open(t *testing.T, c destination.Config, dial destinationtest.Dial) destination.Client {
	t.Helper()
	cl, err := destinationtest.Open(t, pubsub.New(), c, dial)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestAPublishedMessageIsTheSignedEvent: the emulator returns a message id
// for each publish; a subscriber gets the exact body with attributes the
// Standard Webhooks library verifies, the license as the ordering key,
// and a license's messages in their order.
func TestAPublishedMessageIsTheSignedEvent(t *testing.T) {
	t.Parallel()
	addr := emulator(t)
	name, sub := topic(t, addr, "herald-test")
	cl := open(t, destination.Config{"projectId": "herald-test", "topic": name, "endpoint": addr}, nil)
	var sent []destination.Message
	for i, license := range []string{"L1", "L2", "L1", "L1"} {
		m := destinationtest.Message(t, fmt.Sprintf("0193b7a0-0000-7000-8000-00000000004%d", i), license)
		if res := destinationtest.Publish(t, cl, m); !res.OK() || !strings.Contains(res.Answer, "message id") {
			t.Fatalf("publish %d: %+v", i, res)
		}
		sent = append(sent, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []*ps.Message
	err := sub.Receive(ctx, func(_ context.Context, m *ps.Message) {
		m.Ack()
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m)
		if len(got) == len(sent) {
			cancel()
		}
	})
	if err != nil || len(got) != len(sent) {
		t.Fatalf("received %d of %d: %v", len(got), len(sent), err)
	}
	var l1 []string
	for _, r := range got {
		var want destination.Message
		for _, m := range sent {
			if string(m.Body) == string(r.Data) {
				want = m
			}
		}
		destinationtest.Verify(t, r.Data, r.Attributes, want)
		if r.OrderingKey != want.Key {
			t.Errorf("ordering key %q; want the license %q", r.OrderingKey, want.Key)
		}
		if want.Key == "L1" {
			l1 = append(l1, want.EventID)
		}
	}
	if want := []string{sent[0].EventID, sent[2].EventID, sent[3].EventID}; strings.Join(l1, ",") != strings.Join(want, ",") {
		t.Errorf("license L1's messages in order %v; want %v", l1, want)
	}
}

// TestATopicsRefusalIsAFailedAttempt: a topic that does not exist and an
// address the outbound guard refuses fail with a reason; after a failure
// of a license's message, its next one is published.
func TestATopicsRefusalIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	addr := emulator(t)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000051", "L1")
	missing := open(t, destination.Config{"projectId": "herald-test", "topic": "nowhere", "endpoint": addr}, nil)
	if res := destinationtest.Publish(t, missing, m); res.Failure != "not_found" || !strings.Contains(res.Err, "does not exist") {
		t.Errorf("missing topic: %+v; want a failure saying it does not exist", res)
	}
	if res := destinationtest.Publish(t, missing, m); res.Failure != "not_found" {
		t.Errorf("the same license again: %+v; want the same failure, not a paused key", res)
	}
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("address refused by policy")
	}
	name, _ := topic(t, addr, "herald-test")
	if _, err := destinationtest.Open(t, pubsub.New(), destination.Config{"projectId": "herald-test", "topic": name, "endpoint": addr}, refuse); err == nil || !strings.Contains(err.Error(), "refused by policy") {
		t.Errorf("guarded dial: %v; want the guard's refusal", err)
	}
}
