package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/webhook"
)

// Destinations publishes the attempts of webhooks of another type than
// http (a *destination.Router): the same signed attempt, handed to a
// broker instead of POSTed. Everything else about the attempt (its slot,
// lease, outcome, retries, health) is the dispatcher's as for any other.
type Destinations interface {
	Publish(ctx context.Context, webhookID string, m destination.Message) destination.Result
}

// publish makes a destination's attempt: the headers an http receiver
// would get, as the broker's headers or attributes, over the same bytes.
func (s *Sender) publish(ctx context.Context, typ string, req Request) Result {
	sent := s.now()
	if s.dest == nil {
		return Result{SentAt: sent, Err: "this herald publishes to no " + typ + " destination", Failure: "config"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	header := http.Header{
		webhook.IDHeader:        {req.EventID},
		webhook.TimestampHeader: {strconv.FormatInt(sent.Unix(), 10)},
		webhook.SignatureHeader: {req.Signature},
		destination.EventHeader: {req.Kind},
		"content-type":          {"application/json; charset=utf-8"},
	}
	shown, failed := s.sign(req, header)
	if failed != nil {
		return *failed
	}
	key := req.license
	if key == "" {
		key = destination.LicenseOf(req.Kind, req.Body)
	}
	// One webhook's copy of the event is its log: two webhooks publishing
	// to one queue or stream are two messages, and a log's retries one.
	m := destination.Message{EventID: req.EventID, DedupID: req.logID, Kind: req.Kind, Body: req.Body, Headers: ordered(header), Key: key}
	if req.resend {
		m.DedupID = attempt.NewID()
	}
	r := s.dest.Publish(ctx, req.WebhookID, m)
	res := Result{Headers: shown, SentAt: sent, Duration: r.Duration, Err: r.Err, Failure: r.Failure, RespBody: []byte(r.Answer)}
	if r.OK() {
		at := sent.Add(r.Duration)
		res.ReceivedAt = &at
	}
	if r.Err != "" && errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Failure != "timeout" {
		res.Err, res.Failure = fmt.Sprintf("timed out after %s: %s", s.timeout, r.Err), "timeout"
	}
	return res
}

// ownOrder is the order herald's own headers go out in; the custom ones
// follow by name.
var ownOrder = []string{webhook.IDHeader, webhook.TimestampHeader, webhook.SignatureHeader, webhook.NextSignatureHeader,
	destination.EventHeader, "content-type"}

// ordered lists a message's headers: herald's own first, in ownOrder, then
// the webhook's custom headers by name.
func ordered(h http.Header) []destination.Header {
	out := make([]destination.Header, 0, len(h))
	own := map[string]bool{}
	for _, name := range ownOrder {
		own[name] = true
		if v, ok := h[name]; ok && len(v) > 0 && v[0] != "" {
			out = append(out, destination.Header{Name: name, Value: v[0]})
		}
	}
	var custom []string
	for name := range h {
		if !own[name] {
			custom = append(custom, name)
		}
	}
	sort.Strings(custom)
	for _, name := range custom {
		out = append(out, destination.Header{Name: name, Value: h[name][0]})
	}
	return out
}

// publishing makes s publish destinations' attempts through d.
func (s *Sender) publishing(d Destinations) *Sender {
	s.dest = d
	return s
}

// isDestination reports whether a webhook's url is a destination's.
func isDestination(url string) bool {
	_, ok := destination.TypeOf(url)
	return ok
}
