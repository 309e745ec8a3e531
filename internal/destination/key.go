package destination

import (
	"encoding/json"
	"strings"
)

// LicenseOf returns the license an event's body concerns, "" for none: a
// license event's data is the license, an activation's names its license.
// A type keys its messages by it, so a broker that keeps order per key
// (Kafka's partition, Pub/Sub's ordering key, an SQS FIFO group) keeps a
// license's events in their order.
func LicenseOf(kind string, body []byte) string {
	var env struct {
		Data struct {
			ID        string `json:"id"`
			LicenseID string `json:"licenseId"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	switch {
	case strings.HasPrefix(kind, "license."):
		return env.Data.ID
	case strings.HasPrefix(kind, "activation."):
		return env.Data.LicenseID
	}
	return ""
}
