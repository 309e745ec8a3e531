package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"

	ps "cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/heraldhq/herald/internal/destination"
)

// googleEndpoint is Pub/Sub's global endpoint, the client's default.
const googleEndpoint = "pubsub.googleapis.com:443"

// client publishes to one topic.
type client struct {
	topic string
	c     *ps.Client
	pub   *ps.Publisher
}

// Open implements destination.Type: Google's endpoint with the service
// account's key, or an emulator's address without TLS or credentials;
// either way dialled through herald's guarded dial.
func (Type) Open(ctx context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	// Reached once at once, so an address the guard refuses, or nothing
	// listening, fails this attempt with its reason rather than as a
	// time-out of the client's own retries.
	addr := c.String("endpoint")
	if addr == "" {
		addr = googleEndpoint
	}
	probe, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pubsub: %w", err)
	}
	probe.Close()
	opts := []option.ClientOption{option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return dial(ctx, "tcp", addr)
	}))}
	if ep := c.String("endpoint"); ep != "" {
		opts = append(opts, option.WithEndpoint(ep), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	} else {
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, []byte(c.String("credentialsJson"))))
	}
	cl, err := ps.NewClient(context.WithoutCancel(ctx), c.String("projectId"), opts...)
	if err != nil {
		return nil, fmt.Errorf("pubsub: %w", err)
	}
	pub := cl.Publisher(c.String("topic"))
	// Each attempt is published alone and at once: herald batches nothing
	// an attempt waits for.
	pub.PublishSettings.CountThreshold = 1
	pub.PublishSettings.DelayThreshold = 0
	pub.EnableMessageOrdering = true
	return &client{topic: c.String("topic"), c: cl, pub: pub}, nil
}

// Publish implements destination.Client: the signature's headers as the
// message's attributes, the license as its ordering key; it succeeds on
// the message id Pub/Sub returns.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	attrs := make(map[string]string, len(m.Headers))
	for _, h := range m.Headers {
		attrs[h.Name] = h.Value
	}
	id, err := cl.pub.Publish(ctx, &ps.Message{Data: m.Body, Attributes: attrs, OrderingKey: m.Key}).Get(ctx)
	if err == nil {
		return destination.Result{Answer: fmt.Sprintf("published to Pub/Sub (topic %s, message id %s)", cl.topic, id)}
	}
	if m.Key != "" {
		// A failure pauses the key's later publishes until resumed; the
		// attempt's retry is herald's.
		cl.pub.ResumePublish(m.Key)
	}
	return failure(err, cl.topic)
}

// failure says what a publish's error means.
func failure(err error, topic string) destination.Result {
	if errors.Is(err, context.DeadlineExceeded) {
		return destination.Failed("timeout", "Pub/Sub did not answer in time")
	}
	if errors.Is(err, ps.ErrOversizedMessage) {
		return destination.Failed("too_large", "the message is larger than Pub/Sub takes (10 MB)")
	}
	s, _ := status.FromError(err)
	switch s.Code() {
	case codes.NotFound:
		return destination.Failed("not_found", fmt.Sprintf("Pub/Sub: topic %q does not exist in the project; create it", topic))
	case codes.PermissionDenied, codes.Unauthenticated:
		return destination.Failed("unauthorized", "Pub/Sub refused the service account: "+s.Message()+"; grant it roles/pubsub.publisher on the topic")
	case codes.ResourceExhausted:
		return destination.Failed("throttled", "Pub/Sub: "+s.Message())
	case codes.InvalidArgument:
		return destination.Failed("refused", "Pub/Sub refused the message: "+s.Message())
	case codes.Unavailable, codes.DeadlineExceeded:
		return destination.Failed("connection", "Pub/Sub: "+s.Message())
	}
	return destination.Failed("refused", "Pub/Sub: "+err.Error())
}

// Close implements destination.Client.
func (cl *client) Close() error {
	cl.pub.Stop()
	return cl.c.Close()
}
