package server

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "dev"},
		{"go install of a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"a build in a checkout, stamped by Go", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125103000-0123456789ab+dirty"}}, "v0.0.0-20261125103000-0123456789ab+dirty"},
		{"only the commit known", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs", "git", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "false")}, "dev+0123456789ab"},
		{"the commit with changes", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")}, "dev+0123456789ab-dirty"},
		{"built with -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildVersion(tt.bi); got != tt.want {
				t.Errorf("buildVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
