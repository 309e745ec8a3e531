package webhook_test

import (
	"testing"

	"github.com/heraldhq/herald/webhook"
)

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not JSON":   `id=1`,
		"not object": `["license.created"]`,
		"null":       `null`,
		"no id":      `{"event":"license.created","data":{},"triggeredAt":"2026-11-21T08:07:13.120Z"}`,
		"no event":   `{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","data":{}}`,
		"bad time":   `{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","event":"license.created","triggeredAt":"yesterday"}`,
	} {
		if p, err := webhook.Parse([]byte(body)); err == nil {
			t.Errorf("Parse(%s) = %+v, nil; want an error", name, p)
		}
	}
}
