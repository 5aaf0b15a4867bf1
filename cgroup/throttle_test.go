package cgroup

import (
	"testing"
	"time"
)

func TestAlignWindow(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct{ ramp, runtime, wantRamp, wantRuntime time.Duration }{
		{0, 2 * time.Second, 250 * ms, 2 * time.Second},
		{time.Second, 2 * time.Second, 1050 * ms, 2 * time.Second},
		{1050 * ms, 2550 * ms, 1050 * ms, 2600 * ms},
		{5 * time.Second, 60 * time.Second, 5050 * ms, 60 * time.Second},
		{260 * ms, 10 * ms, 350 * ms, 100 * ms},
	} {
		r, rt := AlignWindow(tc.ramp, tc.runtime)
		if r != tc.wantRamp || rt != tc.wantRuntime {
			t.Errorf("AlignWindow(%v, %v) = %v, %v; want %v, %v", tc.ramp, tc.runtime, r, rt, tc.wantRamp, tc.wantRuntime)
		}
		if (r-ThrottleSlice/2)%ThrottleSlice != 0 || rt%ThrottleSlice != 0 || r < MinCappedRamp {
			t.Errorf("AlignWindow(%v, %v) = %v, %v: not mid-slice and whole slices", tc.ramp, tc.runtime, r, rt)
		}
	}
}

func TestSystemdUnit(t *testing.T) {
	for path, want := range map[string]string{
		"/user.slice/user-0.slice/session-3.scope": "session-3.scope",
		"/system.slice/db.service":                 "db.service",
		"/system.slice/db.service/iomatrix/42-1":   "db.service",
		"/system.slice/run-r1.scope/payload/x":     "run-r1.scope",
		"/":                                        "",
		"/iomatrix/42-1":                           "",
		"/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope": "cri-containerd-a.scope",
	} {
		if got := SystemdUnit(path); got != want {
			t.Errorf("SystemdUnit(%q) = %q, want %q", path, got, want)
		}
	}
}
