package bench

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// Scenario m, run briefly against the real brokers on loopback (Kafka:
// kfake in this process): every event herald accepted while its webhooks
// were held is consumed once from each of its destinations once they are
// released, the backlog drained, every message verified, and so is every
// message of each broker's bare producer loop. It asserts no pace.
func TestDestinationScenarioLosesNothing(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "runs the herald binary and three brokers")
	destinationtest.Broker(t, "127.0.0.1:5672", "RabbitMQ")
	destinationtest.Broker(t, "127.0.0.1:4222", "NATS")
	bin := filepath.Join(t.TempDir(), "herald")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/herald").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Binary: bin, Scenarios: []string{"m"}, Duration: time.Second, Clients: 4, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"m-rabbitmq": 1, "m-kafka": 1, "m-nats": 1, "m-rabbitmq-10": 10}
	for _, r := range rep.Results {
		hooks, ok := want[r.Scenario]
		if !ok {
			t.Errorf("result %q; want only %v", r.Scenario, want)
			continue
		}
		delete(want, r.Scenario)
		// DeliveriesPerSec is above 0 only when messages were consumed
		// after the release: a backlog was drained, whatever its pace.
		if r.Events == 0 || r.Webhooks != hooks || r.Deliveries != r.Events*hooks || r.DeliveriesPerSec <= 0 || r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 {
			t.Errorf("%s: %d events to %d webhooks, %d consumed (%.0f/s after the release), lost %d, duplicated %d, bad %d; want every event consumed once from each of %d, a backlog drained, none bad",
				r.Scenario, r.Events, r.Webhooks, r.Deliveries, r.DeliveriesPerSec, r.Lost, r.Duplicated, r.BadSignatures, hooks)
		}
		if r.Ceiling <= 0 || r.CeilingOf == "" || !strings.Contains(r.Note, "lost 0, duplicated 0, bad 0") || strings.Contains(r.Note, "failed") {
			t.Errorf("%s: ceiling %.0f/s of %q (%s); want the broker's, every message of it consumed once", r.Scenario, r.Ceiling, r.CeilingOf, r.Note)
		}
	}
	if len(want) > 0 {
		t.Errorf("no results for %v", want)
	}
}

// A consumed message counts only when it is what herald published: signed
// over its exact body, its webhook-id and webhook-event its body's, and
// each webhook's copy of an event the same bytes.
func TestDestCheckerCountsOnlyWhatHeraldPublished(t *testing.T) {
	t.Parallel()
	const token = "whsec_bench_checker_token_0123456789"
	body := []byte(`{"id":"e1","event":"license.created","data":{"metadata":{"bench":1}}}`)
	other := []byte(`{"id":"e1","event":"license.created","data":{"metadata":{"bench":2}}}`)
	header := func(id, event string, signed []byte) http.Header {
		h := http.Header{}
		h.Set(webhook.IDHeader, id)
		h.Set("webhook-event", event)
		h.Set(webhook.SignatureHeader, webhook.Sign(token, signed))
		return h
	}
	for _, tc := range []struct {
		name          string
		first, second []byte // bodies consumed from webhooks 0 and 1
		h2            http.Header
		unique, bad   int
	}{
		{"the same copy to each", body, body, header("e1", "license.created", body), 2, 0},
		{"a signature not over the body", body, body, header("e1", "license.created", other), 1, 1},
		{"a webhook-id not the body's", body, body, header("e2", "license.created", body), 1, 1},
		{"a webhook-event not the body's", body, body, header("e1", "license.updated", body), 1, 1},
		{"copies that differ", body, other, header("e1", "license.created", other), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv, err := newReceiver()
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.close()
			rcv.add(0, token, false)
			rcv.add(1, token, false)
			c := &destChecker{rcv: rcv, from: "test", bodies: map[string][32]byte{}}
			c.check(0, header("e1", "license.created", tc.first), tc.first)
			c.check(1, tc.h2, tc.second)
			unique, dup, bad := rcv.counts(func(int) bool { return true })
			if unique != tc.unique || dup != 0 || bad != tc.bad {
				t.Errorf("unique %d, duplicated %d, bad %d; want %d, 0, %d", unique, dup, bad, tc.unique, tc.bad)
			}
		})
	}
}

// A broker off loopback is refused before anything starts.
func TestBrokersMustBeOnLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b  Brokers
		ok bool
	}{
		{Brokers{}, true},
		{Brokers{RabbitMQ: "amqp://guest:guest@127.0.0.1:5672/", NATS: "nats://localhost:4222", Kafka: "[::1]:9092"}, true},
		{Brokers{RabbitMQ: "amqp://guest:guest@mq.example.com:5672/"}, false},
		{Brokers{NATS: "nats://10.0.0.7:4222"}, false},
		{Brokers{Kafka: "192.168.1.2:9092"}, false},
		{Brokers{FanOut: "sqs"}, false},
	} {
		if err := tc.b.CheckLoopback(); (err == nil) != tc.ok {
			t.Errorf("%+v: err = %v; want ok %v", tc.b, err, tc.ok)
		}
	}
}
