package event_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// Every kind's sample has a thin form whose path names its object, and
// which keeps the envelope's other fields as they were.
func TestThinNamesTheObjectOfEveryKind(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, k := range event.Kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			full, err := event.BuildSequenced("01937a60-0a1b-7c2d-8e3f-4a5b6c7d8e00", k, event.Sample(k, now), now, 7)
			if err != nil {
				t.Fatal(err)
			}
			thin, err := event.Thin(full)
			if err != nil {
				t.Fatal(err)
			}
			var f, th struct {
				ID          string          `json:"id"`
				Event       string          `json:"event"`
				TriggeredAt string          `json:"triggeredAt"`
				Sequence    int64           `json:"sequence"`
				Data        json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(full, &f); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(thin, &th); err != nil {
				t.Fatal(err)
			}
			var obj struct{ ID string }
			json.Unmarshal(f.Data, &obj)
			var d event.ThinData
			if err := json.Unmarshal(th.Data, &d); err != nil {
				t.Fatal(err)
			}
			if th.ID != f.ID || th.Event != f.Event || th.TriggeredAt != f.TriggeredAt || th.Sequence != 7 {
				t.Errorf("got envelope %s; want that of %s", thin, full)
			}
			if d.ID != obj.ID || d.Path == "" || d.Path[len(d.Path)-len(obj.ID):] != obj.ID {
				t.Errorf("got data %+v; want the id %s and a path ending in it", d, obj.ID)
			}
		})
	}
}
