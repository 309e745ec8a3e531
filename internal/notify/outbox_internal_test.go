package notify

import (
	"testing"
	"time"
)

func TestEmailBackoffDoublesToAnHour(t *testing.T) {
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour, time.Hour}
	for i, w := range want {
		if got := emailBackoff(i + 1); got != w {
			t.Errorf("emailBackoff(%d) = %s; want %s", i+1, got, w)
		}
	}
}
