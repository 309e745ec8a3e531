package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/heraldhq/herald/internal/destination"
)

// client produces to one topic.
type client struct {
	topic string
	kc    *kgo.Client
}

// Open implements destination.Type: a producer waiting for every in-sync
// replica (acks=all, idempotent), which reaches a broker at once so a
// wrong address or credential fails this attempt with the broker's words.
func (Type) Open(ctx context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	if c.Bool("tls.enabled") {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := c.String("tls.caCertificate"); ca != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ca)) {
				return nil, errors.New("kafka: tls.caCertificate holds no PEM certificate")
			}
			cfg.RootCAs = pool
		}
		plainDial := dial
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := plainDial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			host, _, _ := net.SplitHostPort(addr)
			cfg := cfg.Clone()
			cfg.ServerName = host
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	timeout := env.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Strings("brokers")...),
		kgo.DefaultProduceTopic(c.String("topic")),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.Dialer(dial),
		kgo.ClientID("herald"),
		// Within an attempt's time: a record not produced by then fails it,
		// and the attempt is retried by herald's own policy.
		kgo.RecordDeliveryTimeout(timeout),
		kgo.UnknownTopicRetries(2),
		kgo.ProducerLinger(0),
	}
	if m := mechanism(c); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	kc, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if err := kc.Ping(ctx); err != nil {
		kc.Close()
		return nil, fmt.Errorf("kafka: %s", describe(err))
	}
	return &client{topic: c.String("topic"), kc: kc}, nil
}

// mechanism is the config's SASL mechanism, nil for none.
func mechanism(c destination.Config) sasl.Mechanism {
	user, pass := c.String("sasl.username"), c.String("sasl.password")
	switch c.String("sasl.mechanism") {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return nil
}

// Publish implements destination.Client: one record keyed by its license
// (so a partition keeps a license's order), the signature's headers as its
// headers; it succeeds once every in-sync replica has it.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	r := &kgo.Record{Value: m.Body}
	if m.Key != "" {
		r.Key = []byte(m.Key)
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Name, Value: []byte(h.Value)})
	}
	err := cl.kc.ProduceSync(ctx, r).FirstErr()
	if err == nil {
		return destination.Result{Answer: fmt.Sprintf("acknowledged by all in-sync replicas (topic %s, partition %d, offset %d)", r.Topic, r.Partition, r.Offset)}
	}
	return failure(err, cl.topic)
}

// failure says what a produce's error means.
func failure(err error, topic string) destination.Result {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return destination.Failed("not_found", fmt.Sprintf("Kafka: topic %q does not exist; create it (herald does not)", topic))
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return destination.Failed("too_large", "Kafka refused the record as too large: raise the topic's max.message.bytes")
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return destination.Failed("unauthorized", fmt.Sprintf("Kafka: the user may not write to topic %q: grant it WRITE (and IDEMPOTENT_WRITE on the cluster)", topic))
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return destination.Failed("unauthorized", "Kafka refused the SASL user name or password")
	case errors.Is(err, kerr.ThrottlingQuotaExceeded), errors.Is(err, kerr.PolicyViolation):
		return destination.Failed("throttled", "Kafka: "+err.Error())
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend):
		return destination.Failed("refused", "Kafka: fewer in-sync replicas than min.insync.replicas; the record was not acknowledged by all")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		return destination.Failed("timeout", "Kafka did not acknowledge the record in time")
	}
	return destination.Failed("connection", "Kafka: "+describe(err))
}

// describe words an error of the client.
func describe(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message + ": " + ke.Description
	}
	return err.Error()
}

// Close implements destination.Client.
func (cl *client) Close() error {
	cl.kc.Close()
	return nil
}
