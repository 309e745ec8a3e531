package e2e_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/destinationtest"
	"github.com/heraldhq/herald/internal/destination/sqs/sqstest"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestEveryWebhooksCopyAndAResendReachAFIFOQueue: a whole herald publishes
// license.created to an SQS FIFO queue (local-aws-sqs) through two webhooks:
// each copy is deduplicated by its log's id, so both arrive (by the event's
// id, the queue would keep one, and herald would record both sent); a
// Resend a moment later, inside SQS's five-minute window, is a third
// message all the same, with the same bytes and webhook-id and a
// deduplication id of its own, since the owner asked for the event again.
func TestEveryWebhooksCopyAndAResendReachAFIFOQueue(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		url := sqstest.Server(t)
		c := sqstest.Consumer(url)
		q := sqstest.Queue(t, c, true)
		var hook, twin destinationHook
		for _, hk := range []*destinationHook{&hook, &twin} {
			h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "queue", "type": "sqs", "events": []string{"license.created"},
				"signatureScheme": "standard-webhooks", "retryPolicy": map[string]any{"maxAttempts": 1},
				"config": map[string]any{"queueUrl": q, "region": "us-east-1", "endpoint": url,
					"accessKeyId": "AKIAHERALDTEST", "secretAccessKey": "secret"}}, hk)
		}
		license := h.CreateLicense(nil)
		var logs []heraldtest.Log
		heraldtest.Eventually(t, 30*time.Second, "both logs to succeed", func() bool {
			logs = h.Logs("")
			return len(logs) == 2 && h.Log(logs[0].ID).Status == "succeeded" && h.Log(logs[1].ID).Status == "succeeded"
		})
		first := sqstest.Receive(t, c, q, 2, 30*time.Second, false)
		if len(first) != 2 {
			t.Fatalf("consumed %d messages of license.created sent through two webhooks; want 2", len(first))
		}
		body := aws.ToString(first[0].Body)
		var env struct {
			Data struct{ ID string } `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil || env.Data.ID != license {
			t.Fatalf("consumed %s; want license %s's event", body, license)
		}
		eventID := sqstest.Attributes(first[0])["webhook-id"]
		dedups := map[string]bool{}
		for _, m := range first {
			dedups[m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]] = true
		}
		if !dedups[logs[0].ID] || !dedups[logs[1].ID] {
			t.Errorf("deduplication ids %v; want the two logs' ids %s and %s", dedups, logs[0].ID, logs[1].ID)
		}
		log := logs[0]

		h.Must(200, "POST", "/v3/webhook-event-logs/"+log.ID+"/resend", nil, nil)
		again := sqstest.Receive(t, c, q, 1, 30*time.Second, false)
		if len(again) != 1 {
			t.Fatalf("consumed %d messages after the resend; want 1: the queue took the resend for a retry", len(again))
		}
		againAttrs := sqstest.Attributes(again[0])
		if aws.ToString(again[0].Body) != body || againAttrs["webhook-id"] != eventID {
			t.Errorf("resent %q (webhook-id %q); want the same bytes and id as %q (%q)", aws.ToString(again[0].Body), againAttrs["webhook-id"], body, eventID)
		}
		if dedup := again[0].Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]; dedup == "" || dedups[dedup] {
			t.Errorf("the resend's deduplication id %q; want one of its own, not its log's %s", dedup, log.ID)
		}
		token := hook.Token
		if log.WebhookID == twin.ID {
			token = twin.Token
		}
		destinationtest.VerifyWith(t, token, []byte(aws.ToString(again[0].Body)), againAttrs, destination.Message{Body: []byte(body), Kind: "license.created"})
	})
}
