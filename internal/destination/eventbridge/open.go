package eventbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/awsapi"
	"github.com/heraldhq/herald/webhook"
)

// client puts events on one bus.
type client struct {
	bus, source string
	opts        awsapi.Options
	eb          *awseb.Client
}

// Open implements destination.Type. It connects lazily: the first
// attempt's request says whether the bus, the key and the address are
// right.
func (Type) Open(_ context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	o := awsapi.New(c, env)
	cl := awseb.New(awseb.Options{
		Region: o.Region, Credentials: o.Credentials, BaseEndpoint: o.Endpoint,
		HTTPClient: o.HTTPClient, Retryer: o.Retryer,
	})
	return &client{bus: c.String("eventBusName"), source: c.String("source"), opts: o, eb: cl}, nil
}

// Detail is an event's detail on the bus. EventBridge has no attributes
// and re-encodes a detail's JSON, so the exact body travels as a string
// beside the headers that sign it, and the event itself beside them for
// rules to match on (decision 0145).
type Detail struct {
	// Event is the body as JSON: rules match on detail.event.data.….
	Event json.RawMessage `json:"event"`
	// Body is the exact bytes an http receiver gets, which the signature
	// covers.
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

// Publish implements destination.Client: one entry, its detail-type the
// event's kind, its source the config's, its time the signature's; it
// succeeds when EventBridge answers a FailedEntryCount of 0.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	d := Detail{Event: m.Body, Body: string(m.Body), Headers: make(map[string]string, len(m.Headers))}
	var at *time.Time
	for _, h := range m.Headers {
		d.Headers[h.Name] = h.Value
		if h.Name == webhook.TimestampHeader {
			if s, err := strconv.ParseInt(h.Value, 10, 64); err == nil {
				at = aws.Time(time.Unix(s, 0))
			}
		}
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return destination.Failed("config", "the event's body is not JSON, which an EventBridge detail must be: "+err.Error())
	}
	out, err := cl.eb.PutEvents(ctx, &awseb.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(cl.bus), Source: aws.String(cl.source), DetailType: aws.String(m.Kind),
		Detail: aws.String(string(detail)), Time: at,
	}}})
	what := "event bus " + cl.bus
	if err != nil {
		return awsapi.Failure(err, "EventBridge", what)
	}
	if out.FailedEntryCount != 0 || len(out.Entries) != 1 {
		code, msg := "", "the entry was not accepted"
		if len(out.Entries) == 1 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return awsapi.Failure(&smithy.GenericAPIError{Code: code, Message: msg}, "EventBridge", what)
	}
	return destination.Result{Answer: fmt.Sprintf("put on EventBridge (bus %s, event id %s)", cl.bus, aws.ToString(out.Entries[0].EventId))}
}

// Close implements destination.Client.
func (cl *client) Close() error {
	cl.opts.Close()
	return nil
}
