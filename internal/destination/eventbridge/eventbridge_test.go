package eventbridge_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/eventbridge"
	"github.com/heraldhq/herald/internal/netguard"
)

const (
	keyID  = "AKIAHERALDTEST"
	secret = "secret-access-key"
)

// entry is a PutEvents entry as EventBridge's API reference gives it.
type entry struct {
	EventBusName, Source, DetailType, Detail string
	Time                                     float64
}

// bus is a loopback server answering EventBridge's PutEvents as its API
// reference describes it (awsJson1_1, a SigV4 signature for service
// "events"): no server of EventBridge's protocol written apart from herald
// runs on these machines (decision 0145), so this one checks what the
// reference makes checkable, the signature among it, and answers as the
// test tells it.
type bus struct {
	t       *testing.T
	mu      sync.Mutex
	entries []entry
	// answer, when set, is the response's status and body instead of a
	// success.
	status int
	answer string
}

func (b *bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
		b.t.Errorf("X-Amz-Target %q; want AWSEvents.PutEvents", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
		b.t.Errorf("Content-Type %q; want application/x-amz-json-1.1", got)
	}
	b.checkSignature(r, body)
	var in struct{ Entries []entry }
	if err := json.Unmarshal(body, &in); err != nil {
		b.t.Errorf("PutEvents body %q: %v", body, err)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status != 0 {
		w.WriteHeader(b.status)
		io.WriteString(w, b.answer)
		return
	}
	b.entries = append(b.entries, in.Entries...)
	io.WriteString(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"11710aed-b79e-4468-a20b-bb3c0c3b4860"}]}`)
}

// checkSignature signs the request again with AWS's own signer, at the
// time it names, and wants the same Authorization.
func (b *bus) checkSignature(r *http.Request, body []byte) {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+keyID+"/") || !strings.Contains(auth, "/us-east-1/events/aws4_request") {
		b.t.Errorf("Authorization %q; want a SigV4 signature of %s for events in us-east-1", auth, keyID)
		return
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		b.t.Errorf("X-Amz-Date: %v", err)
		return
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	signed := strings.Split(strings.SplitN(auth, "SignedHeaders=", 2)[1], ",")[0]
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header.Set(h, r.Header.Get(h))
		}
	}
	sum := sha256.Sum256(body)
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret},
		again, hex.EncodeToString(sum[:]), "events", "us-east-1", at)
	if err != nil || again.Header.Get("Authorization") != auth {
		b.t.Errorf("the request's signature does not verify with the key (%v):\n got %s\nwant %s", err, auth, again.Header.Get("Authorization"))
	}
}

func start(t *testing.T) (*bus, string) {
	b := &bus{t: t}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func config(url string) destination.Config {
	return destination.Config{"eventBusName": "licensing", "source": "com.example.herald", "region": "us-east-1",
		"endpoint": url, "accessKeyId": keyID, "secretAccessKey": secret}
}

func publish(t *testing.T, c destination.Config, dial destinationtest.Dial, m destination.Message) destination.Result {
	t.Helper()
	cl, err := destinationtest.Open(t, eventbridge.New(), c, dial)
	if err != nil {
		t.Fatal(err)
	}
	return destinationtest.Publish(t, cl, m)
}

// TestAnEntryCarriesTheSignedEvent: one entry on the bus, its detail-type
// the kind and its source the config's; its detail holds the exact body
// and the headers the Standard Webhooks library verifies, and the event
// as JSON for rules.
func TestAnEntryCarriesTheSignedEvent(t *testing.T) {
	b, url := start(t)
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000051", "L1")
	res := publish(t, config(url), nil, m)
	if !res.OK() || !strings.Contains(res.Answer, "event id 11710aed") {
		t.Fatalf("publish: %+v; want the event id EventBridge answered", res)
	}
	if len(b.entries) != 1 {
		t.Fatalf("the bus got %d entries; want 1", len(b.entries))
	}
	e := b.entries[0]
	if e.EventBusName != "licensing" || e.Source != "com.example.herald" || e.DetailType != "license.created" || e.Time == 0 {
		t.Errorf("entry %+v; want bus licensing, source com.example.herald, detail-type license.created and a time", e)
	}
	var d eventbridge.Detail
	if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
		t.Fatalf("detail %q: %v", e.Detail, err)
	}
	destinationtest.Verify(t, []byte(d.Body), d.Headers, m)
	var event struct{ Data struct{ ID string } }
	if err := json.Unmarshal(d.Event, &event); err != nil || event.Data.ID != "L1" {
		t.Errorf("detail.event %s (%v); want the event as JSON, its data.id L1", d.Event, err)
	}
}

// TestARefusalIsAFailedAttempt: EventBridge's refusals, of the request or
// of the entry, and an address the guard refuses fail the attempt with a
// reason a person can act on.
func TestARefusalIsAFailedAttempt(t *testing.T) {
	m := destinationtest.Message(t, "0193b7a0-0000-7000-8000-000000000061", "L1")
	for _, tc := range []struct {
		name    string
		status  int
		answer  string
		guarded bool
		failure string
		says    string
	}{
		{"no such bus", 400, `{"__type":"ResourceNotFoundException","message":"Event bus licensing does not exist."}`, false, "not_found", "event bus licensing does not exist"},
		{"key not allowed", 400, `{"__type":"AccessDeniedException","message":"User is not authorized to perform: events:PutEvents"}`, false, "unauthorized", "its policy allows publishing"},
		{"entry throttled", 200, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"}]}`, false, "throttled", "Rate exceeded"},
		{"entry refused", 200, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"NotAuthorizedForSourceException","ErrorMessage":"Not authorized for the source."}]}`, false, "refused", "NotAuthorizedForSourceException"},
		{"guarded address", 0, "", true, "address_refused", "EventBridge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, url := start(t)
			b.status, b.answer = tc.status, tc.answer
			var dial destinationtest.Dial
			if tc.guarded {
				dial = netguard.Policy{}.DialContext(&net.Dialer{})
			}
			res := publish(t, config(url), dial, m)
			if res.OK() || res.Failure != tc.failure || !strings.Contains(res.Err, tc.says) {
				t.Errorf("%+v; want a %s failure saying %q", res, tc.failure, tc.says)
			}
		})
	}
}
