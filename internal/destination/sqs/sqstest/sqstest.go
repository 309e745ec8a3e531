// Package sqstest starts an SQS server for herald's tests and reads its
// queues as a receiver's worker would: local-aws-sqs, written apart from
// herald, which speaks SQS's JSON protocol (the one AWS's SDK sends) and
// FIFO queues' rules, installed by npm from the lock committed beside it.
package sqstest

import (
	"bufio"
	"context"
	"embed"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/testdb"
)

//go:embed localsqs/package.json localsqs/package-lock.json localsqs/server.js
var files embed.FS

// Server starts local-aws-sqs on a free loopback port for the test and
// returns its URL; it stops when the test ends. Without node and npm the
// test is skipped (under CI=true it fails).
func Server(t testing.TB) string {
	t.Helper()
	_, nodeErr := exec.LookPath("node")
	_, npmErr := exec.LookPath("npm")
	testdb.SkipUnless(t, nodeErr == nil && npmErr == nil, "node and npm are not installed")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "server.js"} {
		b, err := files.ReadFile("localsqs/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", "server.js", fmt.Sprint(port))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The server stops when its stdin closes; before the test's directory
	// is removed (cleanups run last first).
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
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
			t.Fatalf("start local-aws-sqs: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("local-aws-sqs did not start within 2 minutes")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// Consumer is a receiver's own SQS client of the server at url: AWS's
// SDK, as a worker reads the queue.
func Consumer(url string) *awssqs.Client {
	return awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// Queue makes a queue (FIFO when fifo) and returns its URL.
func Queue(t testing.TB, c *awssqs.Client, fifo bool) string {
	t.Helper()
	name := fmt.Sprintf("herald-%d", time.Now().UnixNano())
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// Receive reads up to n messages from a queue, with every attribute,
// for at most wait. With keep it leaves them invisible to later reads
// but not deleted; otherwise it deletes each one read, as a worker does
// once it has handled it (on a FIFO queue, the next message of a group is
// given only once the one before is deleted).
func Receive(t testing.TB, c *awssqs.Client, queueURL string, n int, wait time.Duration, keep bool) []types.Message {
	t.Helper()
	ctx := context.Background()
	var got []types.Message
	for deadline := time.Now().Add(wait); len(got) < n && time.Now().Before(deadline); {
		out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			// The older name of the same list, which local-aws-sqs reads.
			//lint:ignore SA1019 the server reads the older name
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		got = append(got, out.Messages...)
		if keep {
			continue
		}
		for _, m := range out.Messages {
			if _, err := c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete a received message: %v", err)
			}
		}
	}
	return got
}

// Attributes are a message's String attributes (the signature's headers
// and the webhook's custom ones).
func Attributes(m types.Message) map[string]string {
	h := map[string]string{}
	for k, v := range m.MessageAttributes {
		h[k] = aws.ToString(v.StringValue)
	}
	return h
}
