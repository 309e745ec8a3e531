package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A peer is a second sender the same scenarios are driven against, so that
// herald and another scheme are measured by one driver, one receiver and
// one ceiling. The bench does not run a peer: it is given its API's URL
// and key, fires through that API, and receives and verifies the peer's
// deliveries at its own loopback receiver (so the peer must reach
// 127.0.0.1).
//
// An adapter is what the driver needs of a sender: create a webhook at a
// URL and learn its signing token, fire an event carrying the bench's
// sequence number (the receiver reads it back from the delivered payload's
// data.metadata.bench to time it), and remove the webhook afterwards. The
// one kind today is "herald": another herald, of another version or on
// another machine's store, driven through the same /v3 calls as the child.
// A sender with another API is a new kind: those three calls, plus, if its
// payloads or signatures differ from the Standard Webhooks scheme, how the
// receiver finds the sequence number and verifies a delivery.

// Peer names the second sender.
type Peer struct {
	Kind string // "herald"
	URL  string // its API's base URL
	Key  string // its API key (herald: an API token of write scope)
}

// PeerKinds are the kinds of peer the bench drives.
var PeerKinds = []string{"herald"}

// peerScenarios are the scenarios a peer runs: those that need nothing of
// the sender beyond its API (e's and g's settings are herald's own).
var peerScenarios = map[string]bool{"a": true, "b": true, "c": true, "d": true, "f": true}

// measurePeer runs one fire-and-deliver scenario on the peer.
func measurePeer(ctx context.Context, o Options, rcv *receiver, su setup, f firing, name, title string) (Result, error) {
	if o.Peer.Kind != "herald" {
		return Result{}, fmt.Errorf("no peer kind %q", o.Peer.Kind)
	}
	if su.hold || len(su.env) > 0 {
		return Result{}, errors.New("the scenario needs settings of the sender's own")
	}
	c := &child{url: o.Peer.URL, token: o.Peer.Key, client: newClient()}
	s := &session{c: c, rcv: rcv, hooks: su.webhooks, dead: su.dead}
	defer func() {
		rcv.release()
		// The peer keeps its state: the scenario's webhooks must not
		// receive the next scenario's events.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, id := range s.webhookIDs {
			c.call(ctx, "DELETE", "/v3/webhooks/"+id, nil, nil)
		}
	}()
	if err := s.addHooks(ctx, su); err != nil {
		return Result{}, fmt.Errorf("peer: %w", err)
	}
	fmt.Fprintf(o.Log, "bench: %s: %s, on the peer (%s at %s)\n", name, title, o.Peer.Kind, o.Peer.URL)
	s.machine0 = readCPUTimes() // the peer's CPU is the machine's rest
	fired := s.fire(ctx, f, o.Clients)
	s.drain(ctx, 15*time.Second, 5*time.Minute)
	r := s.result(name, title, fired, s.fireStart, 0)
	r.Sender = "peer"
	r.CPUPer1000, r.PeakRSSMB = 0, 0 // not the bench's to read
	return r, nil
}
