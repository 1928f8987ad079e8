package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		b    Info
		want string
	}{
		{Info{"v1.2.3", "0123abc", false, "go1.26.8"}, "v1.2.3, commit 0123abc, go1.26.8"},
		{Info{"dev", "0123abc", true, "go1.26.8"}, "dev, commit 0123abc (modified), go1.26.8"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.b, got, tc.want)
		}
	}
}

// What the linker set wins; the toolchain's record fills in what it did
// not set; without either the commit is "unknown".
func TestFrom(t *testing.T) {
	recorded := &debug.BuildInfo{
		Main: debug.Module{Version: "v0.9.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "fedcba9"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"linked", "v1.2.3", "0123abc", recorded, Info{"v1.2.3", "0123abc", true, runtime.Version()}},
		{"recorded", "dev", "", recorded, Info{"v0.9.0", "fedcba9", true, runtime.Version()}},
		{"devel build", "dev", "", devel, Info{"dev", "unknown", false, runtime.Version()}},
		{"no record", "dev", "", nil, Info{"dev", "unknown", false, runtime.Version()}},
	} {
		if got := from(tc.version, tc.commit, tc.bi); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
