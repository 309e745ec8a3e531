package types_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/kafka"
	"github.com/heraldhq/herald/internal/destination/rabbitmq"
)

// refuseLoopback is a policy that refuses one host, as netguard refuses
// private addresses.
type refuseLoopback struct{}

func (refuseLoopback) ValidateHost(host string) error {
	if host == "127.0.0.1" {
		return errors.New("resolves to a private or loopback address")
	}
	return nil
}

func TestReadNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		typ   destination.Type
		raw   string
		field string // "" when it is read
	}{
		{"good", rabbitmq.New(), `{"url":"amqp://u:p@mq.example.com:5672/","exchange":"x","routingKey":"k"}`, ""},
		{"not an object", rabbitmq.New(), `[1]`, "config"},
		{"required", rabbitmq.New(), `{"exchange":"x"}`, "config.url"},
		{"wrong kind", rabbitmq.New(), `{"url":5}`, "config.url"},
		{"unknown", rabbitmq.New(), `{"url":"amqp://mq.example.com","exchange":"x","queue":"q"}`, "config.queue"},
		{"scheme", rabbitmq.New(), `{"url":"https://mq.example.com","exchange":"x"}`, "config.url"},
		{"refused host", rabbitmq.New(), `{"url":"amqp://127.0.0.1:5672","exchange":"x"}`, "config.url"},
		{"type's own rule", rabbitmq.New(), `{"url":"amqp://mq.example.com"}`, "config.routingKey"},
		{"control character", rabbitmq.New(), `{"url":"amqp://mq.example.com","exchange":"a\u0001"}`, "config.exchange"},
		{"list element", kafka.New(), `{"brokers":["k.example.com:9092","127.0.0.1:9092"],"topic":"t"}`, "config.brokers[1]"},
		{"list of no string", kafka.New(), `{"brokers":[1],"topic":"t"}`, "config.brokers[0]"},
		{"nested unknown", kafka.New(), `{"brokers":["k.example.com:9092"],"topic":"t","sasl":{"mech":"PLAIN"}}`, "config.sasl.mech"},
		{"choice", kafka.New(), `{"brokers":["k.example.com:9092"],"topic":"t","sasl":{"mechanism":"GSSAPI"}}`, "config.sasl.mechanism"},
		{"masked with none stored", kafka.New(), `{"brokers":["k.example.com:9092"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"********"}}`, "config.sasl.password"},
	}
	for _, tt := range tests {
		_, errs := destination.Read(tt.typ, json.RawMessage(tt.raw), nil, refuseLoopback{})
		switch {
		case tt.field == "" && len(errs) > 0:
			t.Errorf("%s: refused %+v; want it read", tt.name, errs)
		case tt.field != "" && (len(errs) == 0 || errs[0].Field != tt.field):
			t.Errorf("%s: errors %+v; want the first naming %s", tt.name, errs, tt.field)
		}
	}
}

func TestMaskedSecretsKeepTheStoredOnes(t *testing.T) {
	t.Parallel()
	k := kafka.New()
	stored, errs := destination.Read(k, json.RawMessage(`{"brokers":["k.example.com:9092"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"s3cret"}}`), nil, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	shown := destination.Mask(k, stored)
	if shown.String("sasl.password") != destination.Masked || shown.String("sasl.username") != "u" || stored.String("sasl.password") != "s3cret" {
		t.Fatalf("masked %v (stored %v); want the password masked, the stored one untouched", shown, stored)
	}
	back, _ := json.Marshal(shown)
	again, errs := destination.Read(k, back, stored, nil)
	if len(errs) > 0 || again.String("sasl.password") != "s3cret" {
		t.Fatalf("the masked config sent back reads %v %v; want the stored password kept", again, errs)
	}

	r := rabbitmq.New()
	mq, _ := destination.Read(r, json.RawMessage(`{"url":"amqp://herald:pw@mq.example.com:5672/v","exchange":"x"}`), nil, nil)
	shown = destination.Mask(r, mq)
	if got := shown.String("url"); got != "amqp://herald:********@mq.example.com:5672/v" {
		t.Fatalf("url shown as %q", got)
	}
	back, _ = json.Marshal(shown)
	again, _ = destination.Read(r, back, mq, nil)
	if again.String("url") != "amqp://herald:pw@mq.example.com:5672/v" {
		t.Fatalf("the masked url sent back reads %q; want the stored password kept", again.String("url"))
	}
}

func TestLicenseOfKeysALicensesEvents(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ kind, body, want string }{
		{"license.created", `{"data":{"id":"L1"}}`, "L1"},
		{"activation.deleted", `{"data":{"id":"A1","licenseId":"L2"}}`, "L2"},
		{"product.created", `{"data":{"id":"P"}}`, ""},
		{"license.created", `not json`, ""},
	} {
		if got := destination.LicenseOf(tt.kind, []byte(tt.body)); got != tt.want {
			t.Errorf("LicenseOf(%s, %s) = %q; want %q", tt.kind, tt.body, got, tt.want)
		}
	}
}
