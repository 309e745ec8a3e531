package delivery

import (
	"testing"
	"time"
)

// contact is sure only after an unbroken run of prompt beats at least gap
// long whose latest is within gap; a failed or slow beat breaks the run,
// and so do two beats further apart than gap.
func TestContact(t *testing.T) {
	const prompt, gap = 2 * time.Second, 10 * time.Second
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type beat struct {
		at   time.Duration
		took time.Duration
		ok   bool
	}
	for _, tt := range []struct {
		name  string
		beats []beat
		at    time.Duration
		want  bool
	}{
		{"no beat", nil, time.Minute, false},
		{"one beat, not yet a run of gap", []beat{{0, 0, true}}, 5 * time.Second, false},
		{"one beat, the run long enough but its latest too old", []beat{{0, 0, true}}, 11 * time.Second, false},
		{"two beats a run of gap", []beat{{0, 0, true}, {8 * time.Second, 0, true}}, 10 * time.Second, true},
		{"a failed beat breaks the run", []beat{{0, 0, true}, {8 * time.Second, 0, true}, {16 * time.Second, 0, false}}, 17 * time.Second, false},
		{"a slow beat breaks the run", []beat{{0, 0, true}, {8 * time.Second, 3 * time.Second, true}}, 10 * time.Second, false},
		{"after a break, a new run of gap", []beat{{0, 0, false}, {1 * time.Second, 0, true}, {9 * time.Second, 0, true}}, 11 * time.Second, true},
		{"after a break, not yet a new run of gap", []beat{{0, 0, false}, {1 * time.Second, 0, true}, {9 * time.Second, 0, true}}, 10 * time.Second, false},
		{"beats further apart than gap are no run", []beat{{0, 0, true}, {11 * time.Second, 0, true}}, 12 * time.Second, false},
		{"the latest beat too old", []beat{{0, 0, true}, {8 * time.Second, 0, true}}, 19 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c contact
			for _, b := range tt.beats {
				c.beat(t0.Add(b.at), b.took, b.ok, prompt, gap)
			}
			if got := c.sure(t0.Add(tt.at), gap); got != tt.want {
				t.Errorf("sure at %s: %v; want %v", tt.at, got, tt.want)
			}
		})
	}
}
