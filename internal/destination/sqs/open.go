package sqs

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/awsapi"
)

// maxAttributes is how many message attributes SQS carries.
const maxAttributes = 10

// client sends to one queue.
type client struct {
	queue string
	fifo  bool
	opts  awsapi.Options
	sqs   *awssqs.Client
}

// Open implements destination.Type. It connects lazily: the first
// attempt's request says whether the queue, the key and the address are
// right.
func (Type) Open(_ context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	o := awsapi.New(c, env)
	cl := awssqs.New(awssqs.Options{
		Region: o.Region, Credentials: o.Credentials, BaseEndpoint: o.Endpoint,
		HTTPClient: o.HTTPClient, Retryer: o.Retryer,
	})
	q := c.String("queueUrl")
	return &client{queue: q, fifo: strings.HasSuffix(q, ".fifo"), opts: o, sqs: cl}, nil
}

// Publish implements destination.Client: the body as the message's body,
// the signature's headers as its attributes; on a FIFO queue the license
// is the message group (one license's events in order) and the message's
// DedupID the deduplication id. It succeeds on the message id SQS returns.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	if len(m.Headers) > maxAttributes {
		return destination.Failed("config", fmt.Sprintf("SQS carries at most %d message attributes; this message has %d headers (the signature's %d and the webhook's custom headers): remove custom headers",
			maxAttributes, len(m.Headers), len(m.Headers)-customHeaders(m)))
	}
	attrs := make(map[string]types.MessageAttributeValue, len(m.Headers))
	for _, h := range m.Headers {
		attrs[h.Name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(h.Value)}
	}
	in := &awssqs.SendMessageInput{QueueUrl: aws.String(cl.queue), MessageBody: aws.String(string(m.Body)), MessageAttributes: attrs}
	if cl.fifo {
		group := m.Key
		if group == "" {
			// Events about no license keep their order among themselves.
			group = "herald"
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(m.Dedup())
	}
	out, err := cl.sqs.SendMessage(ctx, in)
	if err != nil {
		return awsapi.Failure(err, "SQS", "queue "+cl.queue)
	}
	seq := ""
	if out.SequenceNumber != nil {
		seq = ", sequence " + *out.SequenceNumber
	}
	return destination.Result{Answer: fmt.Sprintf("sent to SQS (queue %s, message id %s%s)", cl.queue, aws.ToString(out.MessageId), seq)}
}

// customHeaders counts a message's headers beyond the signature's own.
func customHeaders(m destination.Message) int {
	n := 0
	for _, h := range m.Headers {
		switch h.Name {
		case "webhook-id", "webhook-timestamp", "webhook-signature", "webhook-signature-next", destination.EventHeader, "content-type":
		default:
			n++
		}
	}
	return n
}

// Close implements destination.Client.
func (cl *client) Close() error {
	cl.opts.Close()
	return nil
}
