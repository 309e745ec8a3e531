package event

import (
	"encoding/json"
	"time"
)

// SampleText is put into every sample payload: accents, a dash, CJK and an
// emoji, so that a receiver which re-encodes the body, ASCII-escapes it or
// hashes re-serialised JSON computes a different signature and fails its test.
const SampleText = "Zoë Ångström – 日本語 – 🚀"

// Sample returns synthetic data for kind, shaped like the real resource, for
// the Test action. The values are plainly fake. The shape follows the
// resource that kinds.yaml declares for kind, so a kind of a resource that
// has a sample needs nothing here.
func Sample(kind Kind, now time.Time) map[string]any {
	d, _ := Declared(kind)
	ts := now.UTC().Format(TimeFormat)
	expires := now.UTC().AddDate(1, 0, 0).Format(TimeFormat)
	license := map[string]any{
		"id":                 "00000000-0000-7000-8000-000000000001",
		"key":                "TEST0-00000-00000-00000-00001", // in the shape of a real key; the metadata carries the non-ASCII
		"productId":          "00000000-0000-7000-8000-000000000002",
		"userId":             "00000000-0000-7000-8000-000000000003",
		"expiresAt":          expires,
		"validity":           31536000,
		"allowedActivations": 3,
		"totalActivations":   1,
		"metadata":           map[string]any{"customer": SampleText, "test": true},
		"createdAt":          ts,
		"updatedAt":          ts,
	}
	switch kind {
	case LicenseExpiringSoon:
		license["expiresAt"] = now.UTC().AddDate(0, 0, 7).Format(TimeFormat)
		return license
	case LicenseExpired:
		license["expiresAt"] = ts // the instant that passed
		return license
	}
	switch d.Resource {
	case "Activation":
		return map[string]any{
			"id":          "00000000-0000-7000-8000-000000000004",
			"licenseId":   license["id"],
			"fingerprint": "fp-test-0001",
			"hostname":    "poste-de-zoë-🚀",
			"os":          "日本語 OS",
			"createdAt":   ts,
		}
	case "Product":
		return map[string]any{
			"id":        license["productId"],
			"name":      SampleText,
			"metadata":  map[string]any{"test": true},
			"createdAt": ts,
			"updatedAt": ts,
		}
	case "User":
		return map[string]any{
			"id":        license["userId"],
			"email":     "zoe@example.com",
			"name":      SampleText,
			"createdAt": ts,
			"updatedAt": ts,
		}
	case "Release":
		return map[string]any{
			"id":        "00000000-0000-7000-8000-000000000005",
			"productId": license["productId"],
			"version":   "1.0.0-zoë",
			"files":     []any{},
			"createdAt": ts,
			"updatedAt": ts,
		}
	case "WebhookHealthEvent":
		// The status a webhook has after the change, as the kind's
		// declared example shows it.
		var ex struct {
			Data struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		json.Unmarshal([]byte(d.Example), &ex)
		status := ex.Data.Status
		return map[string]any{
			"id":     "00000000-0000-7000-8000-000000000007",
			"name":   SampleText,
			"url":    "https://example.com/webhooks/zoë",
			"status": status,
			"latestFailure": map[string]any{
				"logId":      "00000000-0000-7000-8000-000000000008",
				"eventId":    "00000000-0000-7000-8000-000000000009",
				"event":      string(LicenseCreated),
				"statusCode": 503,
				"reason":     "receiver answered 503; no attempts left",
				"failedAt":   ts,
			},
		}
	case "TrialActivation":
		return map[string]any{
			"id":          "00000000-0000-7000-8000-000000000006",
			"productId":   license["productId"],
			"fingerprint": "fp-essai-日本",
			"expiresAt":   expires,
			"createdAt":   ts,
		}
	}
	return license
}
