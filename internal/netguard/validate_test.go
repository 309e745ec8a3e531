package netguard

import (
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	t.Parallel()
	const (
		ok         = ""
		private    = "resolves to a private or loopback address, refused unless herald runs with --allow-private-networks"
		metadata   = "resolves to a cloud metadata address"
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
		badName    = "must have a valid host name"
	)
	tests := []struct {
		url         string
		want        string // With AllowPrivate false.
		wantPrivate string // With AllowPrivate true; with AllowMetadata too, metadata is ok.
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
		{"http://169.254.169.254/latest/meta-data/", metadata, metadata},
		{"http://0.0.0.0/", private, ok},
		{"http://[::1]/", private, ok},
		{"http://[::ffff:127.0.0.1]/", private, ok},
		{"http://[::ffff:7f00:1]/", private, ok},
		{"http://[64:ff9b::a9fe:a9fe]/", metadata, metadata},
		{"http://[fd00:ec2::254]/", metadata, metadata},
		{"http://[fe80::1%25eth0]/", private, ok},
		{"http://%31%32%37.0.0.1/", invalid, invalid}, // Go refuses escapes of ASCII in hosts.
		{"http://localhost/", private, ok},
		{"http://LOCALHOST:3000/", private, ok},
		{"http://localhost./", private, ok},
		{"http://api.localhost/", private, ok},

		// Cloud metadata addresses are refused even with private networks
		// allowed, however they are written.
		{"http://169.254.170.2/v2/credentials", metadata, metadata},
		{"http://100.100.100.200/latest/meta-data/", metadata, metadata},
		{"http://192.0.0.192/opc/v2/instance/", metadata, metadata},
		{"http://168.63.129.16/", metadata, metadata},
		{"http://169.254.169.254.:80/", metadata, metadata},
		{"http://[::ffff:169.254.169.254]/", metadata, metadata},
		{"http://[::ffff:a9fe:a9fe]/", metadata, metadata},
		{"http://[::169.254.169.254]/", metadata, metadata},
		{"http://[64:ff9b::169.254.169.254]/", metadata, metadata},
		{"http://[2002:a9fe:a9fe::1]/", metadata, metadata},
		{"http://[FD00:EC2:0::254]/", metadata, metadata},
		{"http://[fd20:ce::254]/", metadata, metadata},
		{"http://2852039166/", numeric, numeric},          // 169.254.169.254 as one integer.
		{"http://0xa9fea9fe/", numeric, numeric},          // …in hex.
		{"http://025177524776/", numeric, numeric},        // …in octal.
		{"http://0251.0376.0251.0376/", numeric, numeric}, // …octal per byte.
		{"http://169.254.43518/", numeric, numeric},       // …with the last two bytes as one.
		{"http://169.254.169.253/", private, ok},          // Link-local, not metadata.

		// The host is read as the dialer reads it: net/http maps a host
		// that is not ASCII through IDNA, where circled and full-width
		// digits and letters are their ASCII selves; case and a trailing
		// dot change no name.
		{"http://①②⑦.⓪.⓪.①/", private, ok},
		{"http://１２７.０.０.１/", private, ok},
		{"http://127。0。0。1/", private, ok},
		{"http://ｌｏｃａｌｈｏｓｔ/", private, ok},
		{"http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", metadata, metadata},
		{"http://①②⑦.①/", numeric, numeric},
		{"http://⓪ｘ⑦ｆ.①/", numeric, numeric},
		{"https://-bücher.example/", badName, badName}, // IDNA refuses it: no lookup could find it
		{"https://xn--bcher-kva.example/", ok, ok},     // bücher.example, already ASCII
		// Cloud metadata names, however written.
		{"http://metadata.google.internal/computeMetadata/v1/", metadata, metadata},
		{"http://metadata.google.internal./", metadata, metadata},
		{"http://METADATA.Google.Internal./", metadata, metadata},
		{"http://ｍｅｔａｄａｔａ.google.internal/", metadata, metadata},
		{"http://metadata.goog/", metadata, metadata},
		{"http://metadata/", metadata, metadata},
		{"http://instance-data/latest/meta-data/", metadata, metadata},
		{"http://instance-data.ec2.internal./", metadata, metadata},
		{"http://metadata.google.internal.example.com/", ok, ok},

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
					t.Errorf("%+v.ValidateURL(%q) = %q; want %q", p, tt.url, got, want)
				}
			}
			check(Policy{}, tt.want)
			check(Policy{AllowPrivate: true}, tt.wantPrivate)
			// AllowMetadata takes metadata out of the metadata check only;
			// those addresses are private too.
			onlyMetadata, open := tt.want, tt.wantPrivate
			if onlyMetadata == metadata {
				onlyMetadata = private
			}
			if open == metadata {
				open = ok
			}
			check(Policy{AllowMetadata: true}, onlyMetadata)
			check(Policy{AllowPrivate: true, AllowMetadata: true}, open)
		})
	}
}
