package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

type destinationHook struct {
	ID     string         `json:"id"`
	URL    string         `json:"url"`
	Type   string         `json:"type"`
	Config map[string]any `json:"config"`
	Token  string         `json:"token"`
}

// TestADestinationKeepsItsConfigAndShowsNoSecret: a webhook of another
// type is made with its config, which every answer shows with its
// secrets masked (a masked value sent back keeps the stored one); its url
// is where it publishes, with no credential; wrong configs are refused
// naming the field, changing nothing; the type stays what it was made.
func TestADestinationKeepsItsConfigAndShowsNoSecret(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		var hook destinationHook
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "bus", "type": "rabbitmq", "events": []string{"license.created"},
			"config": map[string]any{"url": "amqp://herald:s3cret@127.0.0.1:5672/prod", "exchange": "licensing", "routingKey": "events"}}, &hook)
		if hook.Type != "rabbitmq" || hook.URL != "rabbitmq://127.0.0.1:5672/licensing/events" {
			t.Errorf("made type %q url %q; want rabbitmq, rabbitmq://127.0.0.1:5672/licensing/events", hook.Type, hook.URL)
		}
		if got := hook.Config["url"]; got != "amqp://herald:********@127.0.0.1:5672/prod" {
			t.Errorf("config.url shown as %q; want its password masked", got)
		}
		var plain destinationHook
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "http", "url": "http://127.0.0.1:9/x", "events": []string{"license.created"}}, &plain)
		if plain.Type != "http" || plain.Config != nil {
			t.Errorf("an http webhook: type %q config %v; want http and no config", plain.Type, plain.Config)
		}

		var kafka destinationHook
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "stream", "type": "kafka", "events": []string{"license.created"},
			"config": map[string]any{"brokers": []string{"127.0.0.1:9092"}, "topic": "licensing",
				"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "herald", "password": "p4ss"}}}, &kafka)
		sasl, _ := kafka.Config["sasl"].(map[string]any)
		if sasl["password"] != "********" || sasl["username"] != "herald" {
			t.Errorf("kafka sasl shown as %v; want the password masked, the user name shown", sasl)
		}
		// A masked password sent back keeps the stored one; a change of
		// topic moves the url.
		h.Must(200, "PATCH", "/v3/webhooks/"+kafka.ID, map[string]any{"config": map[string]any{"brokers": []string{"127.0.0.1:9092"}, "topic": "other",
			"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "herald", "password": "********"}}}, &kafka)
		if kafka.URL != "kafka://127.0.0.1:9092/other" {
			t.Errorf("after a change of topic, url %q", kafka.URL)
		}

		for _, tc := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"unknown type", map[string]any{"type": "smtp", "config": map[string]any{}}, "type"},
			{"no config", map[string]any{"type": "nats"}, "config"},
			{"config not an object", map[string]any{"type": "nats", "config": "nats://x"}, "config"},
			{"missing field", map[string]any{"type": "nats", "config": map[string]any{"url": "nats://127.0.0.1:4222"}}, "config.subject"},
			{"unknown field", map[string]any{"type": "nats", "config": map[string]any{"url": "nats://127.0.0.1:4222", "subject": "s", "stream": "x"}}, "config.stream"},
			{"wrong scheme", map[string]any{"type": "rabbitmq", "config": map[string]any{"url": "http://127.0.0.1:5672", "exchange": "x"}}, "config.url"},
			{"metadata broker", map[string]any{"type": "kafka", "config": map[string]any{"brokers": []string{"169.254.169.254:9092"}, "topic": "t"}}, "config.brokers[0]"},
			{"broker without port", map[string]any{"type": "kafka", "config": map[string]any{"brokers": []string{"kafka.example.com"}, "topic": "t"}}, "config.brokers[0]"},
			{"sasl without password", map[string]any{"type": "kafka", "config": map[string]any{"brokers": []string{"127.0.0.1:9092"}, "topic": "t",
				"sasl": map[string]any{"mechanism": "PLAIN", "username": "u"}}}, "config.sasl.password"},
			{"bad region", map[string]any{"type": "sqs", "config": map[string]any{"queueUrl": "https://sqs.example.com/1/q", "region": "mars",
				"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "s"}}, "config.region"},
			{"no access key", map[string]any{"type": "eventbridge", "config": map[string]any{"eventBusName": "b", "source": "herald", "region": "us-east-1"}}, "config.accessKeyId"},
			{"url of a destination", map[string]any{"type": "nats", "url": "https://example.com", "config": map[string]any{"url": "nats://127.0.0.1:4222", "subject": "s"}}, "url"},
			{"config of http", map[string]any{"url": "https://example.com", "config": map[string]any{"url": "x"}}, "config"},
		} {
			body := map[string]any{"name": tc.name, "events": []string{"license.created"}}
			for k, v := range tc.body {
				body[k] = v
			}
			var p problem
			if code := h.Do("POST", "/v3/webhooks", body, &p); code != 422 || len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("%s: %d %+v; want 422 naming %s", tc.name, code, p.Errors, tc.field)
			}
		}
		for _, tc := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"another type", map[string]any{"type": "kafka"}, "type"},
			{"config missing its url", map[string]any{"config": map[string]any{"exchange": "x"}}, "config.url"},
			{"null config", map[string]any{"config": nil}, "config"},
		} {
			var p problem
			if code := h.Do("PATCH", "/v3/webhooks/"+hook.ID, tc.body, &p); code != 422 || len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("PATCH %s: %d %+v; want 422 naming %s", tc.name, code, p.Errors, tc.field)
			}
		}
		var again destinationHook
		h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &again)
		if again.URL != hook.URL || again.Config["exchange"] != "licensing" {
			t.Errorf("after refused changes: url %q config %v; want them unchanged", again.URL, again.Config)
		}
	})
}

// TestADestinationsBrokerPassesTheOutboundGuard: with herald's default
// policy a broker on a private or loopback address is refused when saved,
// as a webhook URL is.
func TestADestinationsBrokerPassesTheOutboundGuard(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{DenyPrivate: true})
	for _, tc := range []struct {
		typ    string
		config map[string]any
		field  string
	}{
		{"kafka", map[string]any{"brokers": []string{"kafka.example.com:9092", "10.0.0.8:9092"}, "topic": "t"}, "config.brokers[1]"},
		{"rabbitmq", map[string]any{"url": "amqp://guest:guest@127.0.0.1:5672/", "exchange": "x"}, "config.url"},
		{"nats", map[string]any{"url": "nats://localhost:4222", "subject": "s"}, "config.url"},
		{"pubsub", map[string]any{"projectId": "p", "topic": "t", "endpoint": "192.168.1.4:8085"}, "config.endpoint"},
	} {
		var p problem
		code := h.Do("POST", "/v3/webhooks", map[string]any{"name": tc.typ, "type": tc.typ, "events": []string{"license.created"}, "config": tc.config}, &p)
		if code != 422 || len(p.Errors) == 0 || p.Errors[0].Field != tc.field || !strings.Contains(p.Errors[0].Detail, "private") {
			t.Errorf("%s: %d %+v; want 422 naming %s as private", tc.typ, code, p.Errors, tc.field)
		}
	}
}

// TestADestinationsAttemptIsLoggedLikeAnyOther: an event for a destination
// is attempted through the dispatcher like an http webhook's, and a broker
// that cannot be reached fails the attempt with a reason, logged on the
// event log with the headers that were to be published.
func TestADestinationsAttemptIsLoggedLikeAnyOther(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	var hook destinationHook
	// Port 9 on loopback: nothing listens there.
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "down", "type": "rabbitmq", "events": []string{"license.created"},
		"config": map[string]any{"url": "amqp://guest:guest@127.0.0.1:9/", "exchange": "", "routingKey": "q"}}, &hook)
	h.CreateLicense(nil)
	var log heraldtest.Log
	heraldtest.Eventually(t, 30*time.Second, "an attempt to be recorded", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		if len(logs) != 1 {
			return false
		}
		log = h.Log(logs[0].ID)
		return len(log.Attempts) > 0
	})
	a := log.Attempts[0]
	if a.Error == nil || *a.Error == "" || a.StatusCode != nil {
		t.Fatalf("attempt %+v; want a failure with a reason and no status code", a)
	}
	if strings.Contains(*a.Error, "guest:guest") {
		t.Errorf("the attempt's error %q shows the broker's credentials", *a.Error)
	}
}
