package main_test

import (
	"strings"
	"testing"
)

// The settings of the warning emails are checked before anything starts:
// a portal address that could not prefix a page's path, or a negative
// reminder period, is refused naming the flag.
func TestServeRefusesBadWarningSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"public-url without a scheme", []string{"HERALD_PUBLIC_URL=herald.example.com"}, `--public-url "herald.example.com": want an http or https address`},
		{"public-url of another scheme", []string{"HERALD_PUBLIC_URL=ftp://herald.example.com"}, `--public-url "ftp://herald.example.com": want an http or https address`},
		{"public-url with a query", []string{"HERALD_PUBLIC_URL=https://herald.example.com/?a=1"}, `--public-url "https://herald.example.com/?a=1": want an http or https address`},
		{"public-url with credentials", []string{"HERALD_PUBLIC_URL=https://u:p@herald.example.com"}, `--public-url "https://u:p@herald.example.com": want an http or https address`},
		{"negative reminder", []string{"HERALD_SUSPENDED_REMINDER=-1h"}, "--suspended-reminder must not be negative (0 turns reminders off)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			code, out := runToEnd(t, append(env, tt.env...), "serve")
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want a failure saying %s", code, out, tt.want)
			}
		})
	}
}
