package sqs_test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/sqs"
	"github.com/heraldhq/herald/internal/destination/sqs/sqstest"
	"github.com/heraldhq/herald/internal/netguard"
)

func config(url, queueURL string) destination.Config {
	return destination.Config{"queueUrl": queueURL, "region": "us-east-1", "endpoint": url,
		"accessKeyId": "AKIAHERALDTEST", "secretAccessKey": "secret"}
}

func publish(t *testing.T, c destination.Config, dial destinationtest.Dial, ms ...destination.Message) []destination.Result {
	t.Helper()
	cl, err := destinationtest.Open(t, sqs.New(), c, dial)
	if err != nil {
		t.Fatal(err)
	}
	var res []destination.Result
	for _, m := range ms {
		res = append(res, destinationtest.Publish(t, cl, m))
	}
	return res
}

// TestASentMessageIsTheSignedEvent: what herald sends to a standard queue
// is confirmed by its message id, and a consumer gets the exact body with
// attributes the Standard Webhooks library verifies.
func TestASentMessageIsTheSignedEvent(t *testing.T) {
	url := sqstest.Server(t)
	c := sqstest.Consumer(url)
	q := sqstest.Queue(t, c, false)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000021", "L1")
	res := publish(t, config(url, q), nil, m)[0]
	if !res.OK() || !strings.Contains(res.Answer, "message id ") {
		t.Fatalf("publish: %+v; want SQS's message id", res)
	}
	got := sqstest.Receive(t, c, q, 1, 10*time.Second, true)
	if len(got) != 1 {
		t.Fatalf("consumed %d messages; want 1", len(got))
	}
	if !strings.Contains(res.Answer, aws.ToString(got[0].MessageId)) {
		t.Errorf("answer %q does not name the consumed message's id %s", res.Answer, aws.ToString(got[0].MessageId))
	}
	destinationtest.Verify(t, []byte(aws.ToString(got[0].Body)), sqstest.Attributes(got[0]), m)
}

// TestAFIFOQueueKeepsALicensesOrderAndAnEventOnce: on a FIFO queue each
// license is a message group and a message's deduplication id its
// Message's: its log's id for its automatic attempts, so a retry of a
// sent event is not a second message, and a resend's own, so a resend is
// one.
func TestAFIFOQueueKeepsALicensesOrderAndAnEventOnce(t *testing.T) {
	url := sqstest.Server(t)
	c := sqstest.Consumer(url)
	q := sqstest.Queue(t, c, true)
	a := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000031", "L1")
	b := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000032", "L2")
	resent := a
	resent.DedupID = "0193b7a0-0000-7000-8000-000000000039"
	for i, res := range publish(t, config(url, q), nil, a, b, a, resent) {
		if !res.OK() || !strings.Contains(res.Answer, "sequence ") {
			t.Fatalf("publish %d: %+v; want a message id and a sequence number", i, res)
		}
	}
	// Deleted as they are read: a group's next message comes once the one
	// before it is.
	got := sqstest.Receive(t, c, q, 4, 10*time.Second, false)
	if len(got) != 3 {
		t.Fatalf("consumed %d messages; want 3 (the retry deduplicated, the resend not)", len(got))
	}
	var groups []string
	for i, g := range got {
		group := g.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		m := map[string]destination.Message{"L1": a, "L2": b}[group]
		if group == "L1" && slices.Contains(groups, "L1") {
			m = resent // L1's second message
		}
		groups = append(groups, group)
		if m.EventID == "" {
			t.Fatalf("message group %q (attributes %v); want a license's id", group, g.Attributes)
		}
		if dedup := g.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]; dedup != m.DedupID {
			t.Errorf("message %d: deduplication id %q; want %s", i, dedup, m.DedupID)
		}
		destinationtest.Verify(t, []byte(aws.ToString(g.Body)), sqstest.Attributes(g), m)
	}
	if strings.Join(groups, ",") != "L1,L2,L1" && strings.Join(groups, ",") != "L2,L1,L1" {
		t.Errorf("groups %v; want L1's event before its resend, L2's once", groups)
	}
}

// TestARefusalIsAFailedAttempt: a queue that does not exist, too many
// attributes for SQS and an address the guard refuses each fail the
// attempt with a reason a person can act on.
func TestARefusalIsAFailedAttempt(t *testing.T) {
	url := sqstest.Server(t)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000041", "L1")
	tooMany := m
	for i := range 6 {
		tooMany.Headers = append(tooMany.Headers[:len(tooMany.Headers):len(tooMany.Headers)], destination.Header{Name: fmt.Sprintf("x-team-%d", i), Value: "v"})
	}
	guarded := netguard.Policy{}.DialContext(&net.Dialer{})
	for _, tc := range []struct {
		name    string
		queue   string
		dial    destinationtest.Dial
		m       destination.Message
		failure string
		says    string
	}{
		{"no such queue", url + "/123456789012/no-such-queue", nil, m, "not_found", "does not exist"},
		{"eleven attributes", url + "/123456789012/q", nil, tooMany, "config", "at most 10 message attributes"},
		{"guarded address", url + "/123456789012/q", guarded, m, "address_refused", "SQS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := publish(t, config(url, tc.queue), tc.dial, tc.m)[0]
			if res.OK() || res.Failure != tc.failure || !strings.Contains(res.Err, tc.says) {
				t.Errorf("%+v; want a %s failure saying %q", res, tc.failure, tc.says)
			}
		})
	}
}
