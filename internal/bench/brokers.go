package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Brokers are where scenario m's destinations publish; each must be on
// loopback, as the bench's receivers are.
type Brokers struct {
	RabbitMQ string // an AMQP URL; "": amqp://guest:guest@127.0.0.1:5672/
	NATS     string // a NATS URL with JetStream; "": nats://127.0.0.1:4222
	// Kafka is a seed broker, host:port; "": franz-go's kfake (the Kafka
	// protocol, in this process) started for the scenario.
	Kafka string
	// FanOut is the type scenario m fans out to ten of; "": rabbitmq.
	FanOut string
}

// DestinationTypes are the types scenario m publishes to, in its order.
var DestinationTypes = []string{"rabbitmq", "kafka", "nats"}

// CheckLoopback returns an error, naming the bench's flag, unless every
// broker address of b is on loopback (Kafka's "" is: kfake listens on
// 127.0.0.1) and FanOut is one of DestinationTypes.
func (b Brokers) CheckLoopback() error {
	for _, a := range []struct{ what, addr string }{{"rabbitmq", b.RabbitMQ}, {"nats", b.NATS}, {"kafka", b.Kafka}} {
		if a.addr == "" {
			continue
		}
		host, shown := a.addr, a.addr
		if u, err := url.Parse(a.addr); err == nil && u.Host != "" {
			host, shown = u.Host, u.Redacted() // the password is not repeated
		}
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--%s %q is not on loopback", a.what, shown)
		}
	}
	if b.FanOut != "" && !slices.Contains(DestinationTypes, b.FanOut) {
		return fmt.Errorf("--fan-out-type must be one of %s", strings.Join(DestinationTypes, ", "))
	}
	return nil
}

// broker is one destination type's side of scenario m: places to publish
// to (a queue, a topic, a subject), herald's config for one, a consumer of
// one, and a bare producer to one with the confirm mode herald's type uses.
type broker interface {
	create(ctx context.Context, place string) error
	config(place string) map[string]any
	// consume calls got with each message of place, until stop.
	consume(ctx context.Context, place string, got func(header http.Header, body []byte)) (stop func(), err error)
	producer(ctx context.Context, place string) (producer, error)
	// describes the bare producer, for the report.
	describe() string
	close()
}

// producer publishes to one place and returns once the broker confirmed;
// many goroutines publish through one at once, as herald's client is used.
type producer interface {
	publish(ctx context.Context, m brokerMessage) error
	close()
}

// brokerMessage is one message as herald's destination types send it.
type brokerMessage struct {
	id, key string
	headers []headerField // herald's names, lower case, in herald's order
	body    []byte
}

type headerField struct{ name, value string }

// openBroker connects to typ's broker; run names the places of this run.
func openBroker(ctx context.Context, typ string, b Brokers, run string) (broker, error) {
	switch typ {
	case "rabbitmq":
		return openRabbit(cmp.Or(b.RabbitMQ, "amqp://guest:guest@127.0.0.1:5672/"), run)
	case "kafka":
		return openKafka(ctx, b.Kafka, run)
	case "nats":
		return openNATS(ctx, cmp.Or(b.NATS, "nats://127.0.0.1:4222"), run)
	}
	return nil, fmt.Errorf("no destination type %q", typ)
}

// httpHeader reads a broker's headers as a receiver reads a request's.
func httpHeader(pairs func(yield func(name, value string) bool)) http.Header {
	h := http.Header{}
	for name, value := range pairs {
		h.Set(name, value)
	}
	return h
}

// --- RabbitMQ: durable queues on the default exchange; a producer of
// persistent, mandatory messages on 16 channels in confirm mode (herald's
// rabbitmq client's).

type rabbitBroker struct {
	url, run string
	conn     *amqp.Connection
	ch       *amqp.Channel
	mu       sync.Mutex
	queues   []string
}

const rabbitChannels = 16 // internal/destination/rabbitmq's channels per webhook

func openRabbit(u, run string) (*rabbitBroker, error) {
	conn, err := amqp.Dial(u)
	if err != nil {
		return nil, fmt.Errorf("connect to rabbitmq: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq channel: %w", err)
	}
	return &rabbitBroker{url: u, run: run, conn: conn, ch: ch}, nil
}

func (b *rabbitBroker) queue(place string) string { return "herald-bench-" + b.run + "-" + place }

func (b *rabbitBroker) create(_ context.Context, place string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.ch.QueueDeclare(b.queue(place), true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %s: %w", b.queue(place), err)
	}
	b.queues = append(b.queues, b.queue(place))
	return nil
}

func (b *rabbitBroker) config(place string) map[string]any {
	return map[string]any{"url": b.url, "exchange": "", "routingKey": b.queue(place)}
}

func (b *rabbitBroker) consume(_ context.Context, place string, got func(http.Header, []byte)) (func(), error) {
	ch, err := b.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq consumer channel: %w", err)
	}
	if err := ch.Qos(1000, 0, false); err != nil {
		ch.Close()
		return nil, fmt.Errorf("rabbitmq qos: %w", err)
	}
	deliveries, err := ch.Consume(b.queue(place), "", false, false, false, false, nil)
	if err != nil {
		ch.Close()
		return nil, fmt.Errorf("consume %s: %w", b.queue(place), err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			got(httpHeader(func(yield func(string, string) bool) {
				for k, v := range d.Headers {
					if s, ok := v.(string); ok && !yield(k, s) {
						return
					}
				}
			}), d.Body)
			d.Ack(false)
		}
	}()
	return func() { ch.Close(); <-done }, nil
}

func (b *rabbitBroker) describe() string {
	return fmt.Sprintf("amqp091-go, persistent and mandatory, publisher confirms, %d channels a producer", rabbitChannels)
}

func (b *rabbitBroker) producer(_ context.Context, place string) (producer, error) {
	conn, err := amqp.Dial(b.url)
	if err != nil {
		return nil, fmt.Errorf("connect to rabbitmq: %w", err)
	}
	p := &rabbitProducer{queue: b.queue(place), conn: conn, idle: make(chan *amqp.Channel, rabbitChannels)}
	for range rabbitChannels {
		ch, err := conn.Channel()
		if err == nil {
			err = ch.Confirm(false)
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("rabbitmq confirm channel: %w", err)
		}
		p.idle <- ch
	}
	return p, nil
}

func (b *rabbitBroker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queues {
		b.ch.QueueDelete(q, false, false, false)
	}
	b.conn.Close()
}

type rabbitProducer struct {
	queue string
	conn  *amqp.Connection
	idle  chan *amqp.Channel
}

// publish is herald's: one publish at a time on a channel, waiting for its
// confirm.
func (p *rabbitProducer) publish(ctx context.Context, m brokerMessage) error {
	var ch *amqp.Channel
	select {
	case ch = <-p.idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { p.idle <- ch }()
	headers := amqp.Table{}
	for _, h := range m.headers {
		headers[h.name] = h.value
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", p.queue, true, false, amqp.Publishing{Headers: headers,
		ContentType: "application/json", MessageId: m.id, Type: "license.created", DeliveryMode: amqp.Persistent, Timestamp: time.Now().UTC(), Body: m.body})
	if err != nil {
		return err
	}
	acked, err := dc.WaitContext(ctx)
	if err == nil && !acked {
		err = errors.New("rabbitmq: negative acknowledgement")
	}
	return err
}

func (p *rabbitProducer) close() { p.conn.Close() }

// --- Kafka: topics of 8 partitions; a producer with acks=all,
// idempotent, no linger (herald's kafka client's).

type kafkaBroker struct {
	seeds  []string
	fake   *kfake.Cluster // nil for a given broker
	admin  *kgo.Client
	run    string
	mu     sync.Mutex
	topics []string
}

func openKafka(ctx context.Context, addr, run string) (*kafkaBroker, error) {
	b := &kafkaBroker{run: run}
	if addr == "" {
		// Three brokers, as the kafka destination's tests run.
		fake, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			return nil, fmt.Errorf("start kfake: %w", err)
		}
		b.fake, b.seeds = fake, fake.ListenAddrs()
	} else {
		b.seeds = []string{addr}
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.seeds...))
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("connect to kafka: %w", err)
	}
	b.admin = admin
	return b, nil
}

func (b *kafkaBroker) topic(place string) string { return "herald-bench-" + b.run + "-" + place }

func (b *kafkaBroker) create(ctx context.Context, place string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = b.topic(place), 8, -1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, b.admin)
	if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode != 0 {
		err = fmt.Errorf("error code %d", resp.Topics[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", b.topic(place), err)
	}
	b.mu.Lock()
	b.topics = append(b.topics, b.topic(place))
	b.mu.Unlock()
	return nil
}

func (b *kafkaBroker) config(place string) map[string]any {
	seeds := make([]any, len(b.seeds))
	for i, s := range b.seeds {
		seeds[i] = s
	}
	return map[string]any{"brokers": seeds, "topic": b.topic(place)}
}

func (b *kafkaBroker) consume(ctx context.Context, place string, got func(http.Header, []byte)) (func(), error) {
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.seeds...), kgo.ConsumeTopics(b.topic(place)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			kc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				got(httpHeader(func(yield func(string, string) bool) {
					for _, h := range r.Headers {
						if !yield(h.Key, string(h.Value)) {
							return
						}
					}
				}), r.Value)
			})
		}
	}()
	return func() { cancel(); <-done; kc.Close() }, nil
}

func (b *kafkaBroker) describe() string {
	where := "kfake in the bench's process"
	if b.fake == nil {
		where = "the broker at " + b.seeds[0]
	}
	return "franz-go, acks=all, idempotent, no linger, " + where
}

func (b *kafkaBroker) producer(_ context.Context, place string) (producer, error) {
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.seeds...), kgo.DefaultProduceTopic(b.topic(place)),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return kafkaProducer{kc}, nil
}

func (b *kafkaBroker) close() {
	if b.admin != nil {
		b.mu.Lock()
		if len(b.topics) > 0 && b.fake == nil {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TopicNames = b.topics
			for _, t := range b.topics {
				dt := kmsg.NewDeleteTopicsRequestTopic()
				dt.Topic = kmsg.StringPtr(t)
				req.Topics = append(req.Topics, dt)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req.RequestWith(ctx, b.admin)
			cancel()
		}
		b.mu.Unlock()
		b.admin.Close()
	}
	if b.fake != nil {
		b.fake.Close()
	}
}

type kafkaProducer struct{ kc *kgo.Client }

func (p kafkaProducer) publish(ctx context.Context, m brokerMessage) error {
	r := &kgo.Record{Key: []byte(m.key), Value: m.body}
	for _, h := range m.headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.name, Value: []byte(h.value)})
	}
	return p.kc.ProduceSync(ctx, r).FirstErr()
}

func (p kafkaProducer) close() { p.kc.Close() }

// --- NATS: one JetStream stream (file storage) capturing the run's
// subjects; a producer publishing to JetStream and waiting for the
// stream's acknowledgement (herald's nats client's).

type natsBroker struct {
	url, run, stream string
	nc               *natsgo.Conn
	js               jetstream.JetStream
}

// natsConnect connects to NATS's JetStream at u as name.
func natsConnect(u, name string) (*natsgo.Conn, jetstream.JetStream, error) {
	nc, err := natsgo.Connect(u, natsgo.Name(name))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("nats jetstream: %w", err)
	}
	return nc, js, nil
}

func openNATS(ctx context.Context, u, run string) (*natsBroker, error) {
	nc, js, err := natsConnect(u, "herald bench")
	if err != nil {
		return nil, err
	}
	b := &natsBroker{url: u, run: run, stream: "HERALD_BENCH_" + strings.ToUpper(run), nc: nc, js: js}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: b.stream, Subjects: []string{"herald-bench." + run + ".>"},
		Storage: jetstream.FileStorage}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("create stream %s: %w", b.stream, err)
	}
	return b, nil
}

func (b *natsBroker) subject(place string) string { return "herald-bench." + b.run + "." + place }

func (b *natsBroker) create(context.Context, string) error { return nil } // the stream captures every place

func (b *natsBroker) config(place string) map[string]any {
	return map[string]any{"url": b.url, "subject": b.subject(place)}
}

func (b *natsBroker) consume(ctx context.Context, place string, got func(http.Header, []byte)) (func(), error) {
	cons, err := b.js.CreateConsumer(ctx, b.stream, jetstream.ConsumerConfig{FilterSubject: b.subject(place),
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("nats consumer of %s: %w", b.subject(place), err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		got(httpHeader(func(yield func(string, string) bool) {
			for k, v := range m.Headers() {
				if len(v) > 0 && !yield(k, v[0]) {
					return
				}
			}
		}), m.Data())
	})
	if err != nil {
		return nil, fmt.Errorf("nats consume %s: %w", b.subject(place), err)
	}
	return cc.Stop, nil
}

func (b *natsBroker) describe() string {
	return "nats.go, JetStream publish waiting for the stream's acknowledgement, file storage"
}

func (b *natsBroker) producer(_ context.Context, place string) (producer, error) {
	nc, js, err := natsConnect(b.url, "herald bench producer")
	if err != nil {
		return nil, err
	}
	return natsProducer{b.subject(place), nc, js}, nil
}

func (b *natsBroker) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.js.DeleteStream(ctx, b.stream)
	b.nc.Close()
}

type natsProducer struct {
	subject string
	nc      *natsgo.Conn
	js      jetstream.JetStream
}

func (p natsProducer) publish(ctx context.Context, m brokerMessage) error {
	msg := natsgo.NewMsg(p.subject)
	for _, h := range m.headers {
		msg.Header.Set(h.name, h.value)
	}
	msg.Data = m.body
	// As herald's nats type does: the id keys the stream's duplicate window.
	_, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.id))
	return err
}

func (p natsProducer) close() { p.nc.Close() }
