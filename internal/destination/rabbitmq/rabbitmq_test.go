package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/rabbitmq"
)

// broker is the RabbitMQ these machines run (.ci/run starts it).
const broker = "amqp://guest:guest@127.0.0.1:5672/"

// consumer declares an exchange and a queue bound to it with key, on the
// real broker, removed at the end of the test.
func consumer(t *testing.T, key string) (exchange string, deliveries <-chan amqp.Delivery) {
	t.Helper()
	destinationtest.Broker(t, "127.0.0.1:5672", "RabbitMQ")
	conn, err := amqp.Dial(broker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	exchange = "herald-test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000")
	if err := ch.ExchangeDeclare(exchange, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, key, exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return exchange, d
}

// TestAConfirmedMessageIsTheSignedEvent: what herald publishes is
// confirmed by the broker, and a consumer of the bound queue gets the
// exact body with headers the Standard Webhooks library verifies;
// messages of many attempts at once are each confirmed once.
func TestAConfirmedMessageIsTheSignedEvent(t *testing.T) {
	t.Parallel()
	exchange, deliveries := consumer(t, "events")
	cl, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": broker, "exchange": exchange, "routingKey": "events"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000001", "L1")
	res := destinationtest.Publish(t, cl, m)
	if !res.OK() || !strings.Contains(res.Answer, "confirmed") {
		t.Fatalf("publish: %+v; want a confirm", res)
	}
	select {
	case d := <-deliveries:
		headers := map[string]string{}
		for k, v := range d.Headers {
			headers[k], _ = v.(string)
		}
		destinationtest.Verify(t, d.Body, headers, m)
		if d.MessageId != m.EventID || d.DeliveryMode != amqp.Persistent {
			t.Errorf("message id %q, delivery mode %d; want the event id, persistent", d.MessageId, d.DeliveryMode)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nothing consumed")
	}

	// Many at once, through the webhook's one connection.
	errs := make(chan string, 40)
	for i := range 40 {
		go func() {
			r := destinationtest.Publish(t, cl, destinationtest.Message(t, "0193b7a0-0000-7000-8000-1000000000"+string(rune('a'+i%26))+string(rune('a'+i/26)), "L2"))
			errs <- r.Err
		}()
	}
	for range 40 {
		if e := <-errs; e != "" {
			t.Errorf("concurrent publish: %s", e)
		}
	}
	got := 0
	for got < 40 {
		select {
		case <-deliveries:
			got++
		case <-time.After(20 * time.Second):
			t.Fatalf("consumed %d of 40", got)
		}
	}
}

// TestManyAttemptsShareSixteenChannels: 64 attempts at once (the
// dispatcher's most to one webhook) wait for the connection's 16 confirm
// channels rather than open and close channels of their own. A channel's
// delivery tags count from 1, so the confirms tagged 1 are the channels
// opened.
func TestManyAttemptsShareSixteenChannels(t *testing.T) {
	t.Parallel()
	exchange, deliveries := consumer(t, "events")
	go func() {
		for range deliveries {
		}
	}()
	cl, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": broker, "exchange": exchange, "routingKey": "events"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 64, 10
	answers := make(chan destination.Result, workers*each)
	for w := range workers {
		go func() {
			for i := range each {
				answers <- destinationtest.Publish(t, cl, destinationtest.Message(t, fmt.Sprintf("0193b7a0-0000-7000-8000-2%03d%08d", w, i), "L3"))
			}
		}()
	}
	opened := 0
	for range workers * each {
		r := <-answers
		if !r.OK() {
			t.Fatalf("publish: %+v", r)
		}
		if strings.HasSuffix(r.Answer, "delivery tag 1)") {
			opened++
		}
	}
	if opened > 16 {
		t.Errorf("%d channels opened for %d attempts, %d at once; want at most 16", opened, workers*each, workers)
	}
}

// TestABrokersRefusalIsAFailedAttempt: a message no queue receives, an
// exchange that does not exist, a wrong password and an address the
// outbound guard refuses each fail with a reason a person can act on,
// and the client keeps publishing after a refusal.
func TestABrokersRefusalIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	exchange, deliveries := consumer(t, "bound")
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000002", "L1")

	unbound, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": broker, "exchange": exchange, "routingKey": "nobody"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := destinationtest.Publish(t, unbound, m); res.Failure != "unroutable" || !strings.Contains(res.Err, "no queue is bound") {
		t.Errorf("unroutable: %+v; want a failure saying no queue is bound", res)
	}
	// The same client, its channel reused, still publishes.
	if res := destinationtest.Publish(t, unbound, m); res.Failure != "unroutable" {
		t.Errorf("second unroutable: %+v", res)
	}

	missing, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": broker, "exchange": exchange + "-missing", "routingKey": "bound"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := destinationtest.Publish(t, missing, m); res.Failure != "not_found" || !strings.Contains(res.Err, "does not exist") {
		t.Errorf("missing exchange: %+v; want a failure saying it does not exist", res)
	}
	if res := destinationtest.Publish(t, missing, m); res.Failure != "not_found" {
		t.Errorf("missing exchange again (a new channel): %+v", res)
	}

	if _, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": "amqp://guest:wrong@127.0.0.1:5672/", "exchange": exchange, "routingKey": "bound"}, nil); err == nil ||
		!strings.Contains(err.Error(), "refused the user name or password") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v; want the broker's refusal, without the password", err)
	}

	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("address refused by policy")
	}
	if _, err := destinationtest.Open(t, rabbitmq.New(), destination.Config{"url": broker, "exchange": exchange, "routingKey": "bound"}, refuse); err == nil || !strings.Contains(err.Error(), "refused by policy") {
		t.Errorf("guarded dial: %v; want the guard's refusal", err)
	}
	select {
	case d := <-deliveries:
		t.Errorf("a refused message reached the queue: %s", d.Body)
	default:
	}
}
