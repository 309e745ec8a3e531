package retention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/retention"
)

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	for _, tt := range []struct {
		in      string
		want    time.Duration
		wantErr string // part of the error; "" for none
	}{
		{in: "0"},
		{in: "30d", want: 30 * day},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "12h", want: 12 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: " 7d ", want: 7 * day},
		{in: "106751d", want: 106751 * day},
		{in: "106750d24h", want: 106751 * day},
		{in: "2562024h", want: 106751 * day},
		// 213504d × 24h is 2^64 ns plus a little, which wrapped to about 25 minutes.
		{in: "213504d", wantErr: "longer than the longest retention, 106751d"},
		{in: "106752d", wantErr: "longer than the longest retention, 106751d"},
		{in: "106751d1ns", wantErr: "longer than the longest retention, 106751d"},
		{in: "200000d", wantErr: "longer than the longest retention, 106751d"},
		{in: "99999999999999999999d", wantErr: "longer than the longest retention, 106751d"},
		{in: "2562025h", wantErr: "longer than the longest retention, 106751d"},
		{in: "1d2562047h", wantErr: "longer than the longest retention, 106751d"},
		{in: "3000000h", wantErr: "at most 106751d"}, // overflows time.Duration itself
		{in: "", wantErr: "want a duration such as 30d"},
		{in: "d", wantErr: "want a duration such as 30d"},
		{in: "-1d", wantErr: "want a duration such as 30d"},
		{in: "-5h", wantErr: "want a duration such as 30d"},
		{in: "1d-5h", wantErr: "want a duration such as 30d"},
		{in: "30days", wantErr: "want a duration such as 30d"},
		{in: "forever", wantErr: "want a duration such as 30d"},
	} {
		got, err := retention.ParseDuration(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseDuration(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.wantErr)
		}
	}
}
