package netguard

import (
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	t.Parallel()
	const (
		ok         = ""
		private    = "resolves to a private or loopback address"
		scheme     = "must use http or https"
		noHost     = "must have a host"
		creds      = "must not contain credentials"
		fragment   = "must not contain a fragment (#)"
		numeric    = "must use a standard IP address or host name"
		badPort    = "must have a port between 1 and 65535"
		invalid    = "must be a valid URL"
		notAbs     = "must be an absolute URL starting with http:// or https://"
		tooLong    = "must be at most 2048 characters"
		longPrefix = "https://example.com/"
	)
	tests := []struct {
		url         string
		want        string // With AllowPrivate false.
		wantPrivate string // With AllowPrivate true.
	}{
		{"https://example.com/hooks/herald", ok, ok},
		{"http://example.com", ok, ok},
		{"HTTPS://Example.COM:8443/x?y=1", ok, ok},
		{"https://8.8.8.8/hook", ok, ok},
		{"https://[2606:4700:4700::1111]/hook", ok, ok},
		{"https://bücher.example/hook", ok, ok},
		{"https://localhost.example.com/", ok, ok}, // Only the localhost TLD is special.
		{longPrefix + strings.Repeat("a", MaxURLLength-len(longPrefix)), ok, ok},

		{longPrefix + strings.Repeat("a", MaxURLLength-len(longPrefix)+1), tooLong, tooLong},
		{"", notAbs, notAbs},
		{"example.com/hook", notAbs, notAbs},
		{"//example.com/hook", notAbs, notAbs},
		{"/hook", notAbs, notAbs},
		{"http://exa mple.com/", invalid, invalid},
		{"http://[::1/", invalid, invalid},
		{"http://example.com:port/", invalid, invalid},
		{"ftp://example.com/", scheme, scheme},
		{"file:///etc/passwd", scheme, scheme},
		{"gopher://example.com/", scheme, scheme},
		{"javascript:alert(1)", scheme, scheme},
		{"ws://example.com/", scheme, scheme},
		{"http:example.com", noHost, noHost},
		{"http:///hook", noHost, noHost},
		{"https://:443/hook", noHost, noHost},
		{"https://user:pass@example.com/", creds, creds},
		{"https://user@example.com/", creds, creds},
		{"https://@example.com/", creds, creds},
		{"https://example.com/#top", fragment, fragment},
		{"https://example.com/#", fragment, fragment},
		{"https://example.com:0/", badPort, badPort},
		{"https://example.com:65536/", badPort, badPort},
		{"https://example.com:65535/", ok, ok},

		{"http://127.0.0.1:8080/hook", private, ok},
		{"http://127.0.0.1./hook", private, ok},
		{"http://10.0.0.5/", private, ok},
		{"http://169.254.169.254/latest/meta-data/", private, ok},
		{"http://0.0.0.0/", private, ok},
		{"http://[::1]/", private, ok},
		{"http://[::ffff:127.0.0.1]/", private, ok},
		{"http://[::ffff:7f00:1]/", private, ok},
		{"http://[64:ff9b::a9fe:a9fe]/", private, ok},
		{"http://[fd00:ec2::254]/", private, ok},
		{"http://[fe80::1%25eth0]/", private, ok},
		{"http://%31%32%37.0.0.1/", invalid, invalid}, // Go refuses escapes of ASCII in hosts.
		{"http://localhost/", private, ok},
		{"http://LOCALHOST:3000/", private, ok},
		{"http://localhost./", private, ok},
		{"http://api.localhost/", private, ok},

		// Non-standard IPv4 spellings are refused in both modes.
		{"http://2130706433/", numeric, numeric},
		{"http://0x7f000001/", numeric, numeric},
		{"http://0x7f.1/", numeric, numeric},
		{"http://127.1/", numeric, numeric},
		{"http://017700000001/", numeric, numeric},
		{"http://8.8.8.010/", numeric, numeric},
		{"http://example.123/", numeric, numeric},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			check := func(p Policy, want string) {
				t.Helper()
				err := p.ValidateURL(tt.url)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != want {
					t.Errorf("Policy{AllowPrivate: %v}.ValidateURL(%q) = %q; want %q", p.AllowPrivate, tt.url, got, want)
				}
			}
			check(Policy{}, tt.want)
			check(Policy{AllowPrivate: true}, tt.wantPrivate)
		})
	}
}
