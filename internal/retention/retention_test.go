package retention_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/retention"
)

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "0"},
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "12h", want: 12 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: " 7d ", want: 7 * 24 * time.Hour},
		{in: "", bad: true},
		{in: "d", bad: true},
		{in: "-1d", bad: true},
		{in: "-5h", bad: true},
		{in: "30days", bad: true},
		{in: "forever", bad: true},
	} {
		got, err := retention.ParseDuration(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}
