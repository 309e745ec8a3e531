package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// rabbitQueue declares an exchange and a queue bound to it with key "events"
// on the RabbitMQ on loopback, and returns the exchange and the queue's
// deliveries.
func rabbitQueue(t *testing.T) (string, <-chan amqp.Delivery) {
	t.Helper()
	destinationtest.Broker(t, "127.0.0.1:5672", "RabbitMQ")
	conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	exchange := "herald-e2e-" + time.Now().Format("150405.000000000")
	if err := ch.ExchangeDeclare(exchange, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "events", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return exchange, d
}

// next is the next message consumed, its headers as text.
func next(t *testing.T, d <-chan amqp.Delivery, what string) ([]byte, http.Header) {
	t.Helper()
	select {
	case m := <-d:
		h := http.Header{}
		for k, v := range m.Headers {
			s, _ := v.(string)
			h.Set(k, s)
		}
		return m.Body, h
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing consumed", what)
	}
	return nil, nil
}

// TestALicensingEventIsPublishedToRabbitMQ: a whole herald fires
// license.created to a rabbitmq destination; the queue's consumer gets the
// event's bytes, verified with the Standard Webhooks library with the
// webhook's token; the log's attempt says where and what the broker
// answered; Test and Resend publish too, the resend with the same
// webhook-id; a routing key no queue is bound to fails the attempt with
// a reason and makes the webhook Unhealthy, as a failing receiver would.
func TestALicensingEventIsPublishedToRabbitMQ(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		exchange, deliveries := rabbitQueue(t)
		var hook destinationHook
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "bus", "type": "rabbitmq", "events": []string{"license.created"},
			"signatureScheme": "standard-webhooks", "retryPolicy": map[string]any{"maxAttempts": 1},
			"config": map[string]any{"url": "amqp://guest:guest@127.0.0.1:5672/", "exchange": exchange, "routingKey": "events"}}, &hook)
		license := h.CreateLicense(nil)
		body, headers := next(t, deliveries, "license.created")
		var env struct {
			Data struct{ ID string } `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Data.ID != license {
			t.Fatalf("consumed %s; want license %s's event", body, license)
		}
		wh, err := standardwebhooks.NewWebhook(hook.Token)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, headers); err != nil {
			t.Errorf("the Standard Webhooks library refused the published event: %v (headers %v)", err, headers)
		}
		if headers.Get("webhook-event") != "license.created" {
			t.Errorf("webhook-event %q; want license.created", headers.Get("webhook-event"))
		}
		var log heraldtest.Log
		heraldtest.Eventually(t, 30*time.Second, "the log to succeed", func() bool {
			logs := h.Logs("webhookId=" + hook.ID)
			if len(logs) != 1 {
				return false
			}
			log = h.Log(logs[0].ID)
			return log.Status == "succeeded"
		})
		if log.Payload != string(body) {
			t.Errorf("log payload %q; the consumed body %q", log.Payload, body)
		}
		a := log.Attempts[0]
		if a.StatusCode != nil || !strings.Contains(a.ResponseBody, "confirmed by RabbitMQ") {
			t.Errorf("attempt: status %v, answer %q; want no status and the broker's confirm", a.StatusCode, a.ResponseBody)
		}

		// Resend: the same bytes, the same webhook-id.
		h.Must(200, "POST", "/v3/webhook-event-logs/"+log.ID+"/resend", nil, nil)
		again, againHeaders := next(t, deliveries, "the resend")
		if string(again) != string(body) || againHeaders.Get("webhook-id") != headers.Get("webhook-id") {
			t.Errorf("resent %q (webhook-id %q); want the same bytes and id as %q (%q)", again, againHeaders.Get("webhook-id"), body, headers.Get("webhook-id"))
		}

		// Test publishes a sample.
		var test struct {
			Succeeded bool    `json:"succeeded"`
			Error     *string `json:"error"`
			Response  any     `json:"response"`
			Published *struct {
				Answer string `json:"answer"`
			} `json:"published"`
		}
		h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{}, &test)
		if !test.Succeeded || test.Published == nil || !strings.Contains(test.Published.Answer, "confirmed") || test.Response != nil {
			t.Errorf("Test: %+v; want it published, the broker's confirmation its answer, no http response", test)
		}
		sample, sampleHeaders := next(t, deliveries, "the Test")
		if err := wh.Verify(sample, sampleHeaders); err != nil {
			t.Errorf("the Test's sample does not verify: %v", err)
		}

		// A routing key no queue is bound to.
		var cfg = map[string]any{"url": "amqp://guest:********@127.0.0.1:5672/", "exchange": exchange, "routingKey": "nobody"}
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"config": cfg}, &hook)
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 30*time.Second, "the unroutable event to fail", func() bool {
			for _, l := range h.Logs("webhookId=" + hook.ID + "&status=failed") {
				full := h.Log(l.ID)
				if e := full.Attempts[0].Error; e != nil && strings.Contains(*e, "no queue is bound") {
					return true
				}
			}
			return false
		})
		var status struct{ Status string }
		h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &status)
		if status.Status != "Unhealthy" {
			t.Errorf("after a failed event the webhook is %s; want Unhealthy", status.Status)
		}
	})
}
