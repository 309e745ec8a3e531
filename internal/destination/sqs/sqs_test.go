package sqs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/sqs"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/testdb"
)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
	stop       = func() {}
)

// server starts local-aws-sqs, an SQS server written apart from herald
// that speaks SQS's JSON protocol (the one AWS's SDK sends), on a free
// loopback port, once for the package's tests; installed by npm from the
// committed lock.
func server(t *testing.T) string {
	t.Helper()
	_, nodeErr := exec.LookPath("node")
	_, npmErr := exec.LookPath("npm")
	testdb.SkipUnless(t, nodeErr == nil && npmErr == nil, "node and npm are not installed")
	serverOnce.Do(func() { serverURL, serverErr = start() })
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return serverURL
}

func start() (string, error) {
	dir, err := os.MkdirTemp("", "herald-sqs-")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"package.json", "package-lock.json", "server.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "localsqs", f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", "server.js", fmt.Sprint(port))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	stop = func() { stdin.Close(); cmd.Wait(); os.RemoveAll(dir) }
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "listening") {
			err = fmt.Errorf("local-aws-sqs said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, stdout)
	}()
	select {
	case err := <-ready:
		if err != nil {
			return "", fmt.Errorf("start local-aws-sqs: %w", err)
		}
	case <-time.After(2 * time.Minute):
		return "", errors.New("local-aws-sqs did not start within 2 minutes")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	stop()
	os.Exit(code)
}

// consumer is the test's own SQS client: AWS's SDK, as a receiver's
// worker reads the queue.
func consumer(url string) *awssqs.Client {
	return awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// queue makes a queue (FIFO when fifo) and returns its URL.
func queue(t *testing.T, c *awssqs.Client, fifo bool) string {
	t.Helper()
	name := fmt.Sprintf("herald-%d", time.Now().UnixNano())
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := c.CreateQueue(t.Context(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

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

// receive reads up to n messages from a queue with every attribute,
// keeping them invisible to later reads.
func receive(t *testing.T, c *awssqs.Client, queueURL string, n int) []types.Message {
	t.Helper()
	var got []types.Message
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); {
		out, err := c.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			// The older name of the same list, which local-aws-sqs reads.
			//lint:ignore SA1019 the server reads the older name
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		got = append(got, out.Messages...)
	}
	return got
}

func headers(m types.Message) map[string]string {
	h := map[string]string{}
	for k, v := range m.MessageAttributes {
		h[k] = aws.ToString(v.StringValue)
	}
	return h
}

// TestASentMessageIsTheSignedEvent: what herald sends to a standard queue
// is confirmed by its message id, and a consumer gets the exact body with
// attributes the Standard Webhooks library verifies.
func TestASentMessageIsTheSignedEvent(t *testing.T) {
	url := server(t)
	c := consumer(url)
	q := queue(t, c, false)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000021", "L1")
	res := publish(t, config(url, q), nil, m)[0]
	if !res.OK() || !strings.Contains(res.Answer, "message id ") {
		t.Fatalf("publish: %+v; want SQS's message id", res)
	}
	got := receive(t, c, q, 1)
	if len(got) != 1 {
		t.Fatalf("consumed %d messages; want 1", len(got))
	}
	if !strings.Contains(res.Answer, aws.ToString(got[0].MessageId)) {
		t.Errorf("answer %q does not name the consumed message's id %s", res.Answer, aws.ToString(got[0].MessageId))
	}
	destinationtest.Verify(t, []byte(aws.ToString(got[0].Body)), headers(got[0]), m)
}

// TestAFIFOQueueKeepsALicensesOrderAndAnEventOnce: on a FIFO queue each
// license is a message group and each event's id its deduplication id,
// so a retry of a sent event is not a second message.
func TestAFIFOQueueKeepsALicensesOrderAndAnEventOnce(t *testing.T) {
	url := server(t)
	c := consumer(url)
	q := queue(t, c, true)
	a := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000031", "L1")
	b := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000032", "L2")
	for i, res := range publish(t, config(url, q), nil, a, b, a) {
		if !res.OK() || !strings.Contains(res.Answer, "sequence ") {
			t.Fatalf("publish %d: %+v; want a message id and a sequence number", i, res)
		}
	}
	got := receive(t, c, q, 3)
	if len(got) != 2 {
		t.Fatalf("consumed %d messages; want 2 (the retry deduplicated)", len(got))
	}
	want := map[string]destination.Message{"L1": a, "L2": b}
	for _, g := range got {
		group := g.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		m, ok := want[group]
		if !ok {
			t.Fatalf("message group %q (attributes %v); want a license's id", group, g.Attributes)
		}
		delete(want, group)
		if dedup := g.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]; dedup != m.EventID {
			t.Errorf("deduplication id %q; want the event's id %s", dedup, m.EventID)
		}
		destinationtest.Verify(t, []byte(aws.ToString(g.Body)), headers(g), m)
	}
}

// TestARefusalIsAFailedAttempt: a queue that does not exist, too many
// attributes for SQS and an address the guard refuses each fail the
// attempt with a reason a person can act on.
func TestARefusalIsAFailedAttempt(t *testing.T) {
	url := server(t)
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
