package main

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/vmtest"
)

// iocost on a real cgroup v2 kernel: the iocost profile on the emulated
// drive (its QoS runs among its cells), its model applied (the kernel
// takes the lines and reads them back equal), and reset, both from a device the kernel listed no line
// for and from one it did, where the lines must come back byte for byte.
func TestVMIOCost(t *testing.T) {
	const prelude = `D=$(cat /sys/block/nvme0n1/dev)
say() { echo "vmcase: $*" >&2; }
lines() { say "model $(grep "^$D " /sys/fs/cgroup/io.cost.model)"; say "qos $(grep "^$D " /sys/fs/cgroup/io.cost.qos)"; }
`
	cases := []vmtest.Case{
		{Name: "iocost", Script: prelude + `iomatrix sweep /dev/nvme0n1 --profile iocost --size 512m --runtime 1s --ramp 0.2s --allow-destructive -o /tmp/ic.json >/dev/null 2>&1 || { say "sweep failed"; exit 3; }
iomatrix iocost model /tmp/ic.json >&2 || exit 4
lines
iomatrix iocost apply /dev/nvme0n1 --from /tmp/ic.json --state /tmp/st.json || exit 5
lines
iomatrix iocost show /dev/nvme0n1 --state /tmp/st.json >&2
iomatrix iocost reset /dev/nvme0n1 --state /tmp/st.json || exit 6
lines
[ -e /tmp/st.json ] && say "state left"
# Now the kernel lists the device: apply twice, then reset.
iomatrix iocost apply /dev/nvme0n1 --from /tmp/ic.json --state /tmp/st.json >/dev/null || exit 7
iomatrix iocost apply /dev/nvme0n1 --from /tmp/ic.json --vrate 1-100 --state /tmp/st.json >/dev/null || exit 7
lines
iomatrix iocost reset /dev/nvme0n1 --state /tmp/st.json >/dev/null || exit 8
lines
# Refused: a bad value never reaches the kernel; a device without
# blk-mq (a partition's disk is taken, so use a missing queue).
echo "$D min=90 max=80" >/sys/fs/cgroup/io.cost.qos 2>/dev/null && say "kernel took min>max"
iomatrix iocost show /dev/nvme0n1 --cgroupfs /tmp >/dev/null 2>&1; say "show without io.cost exit $?"
`},
	}
	rs := vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 1 << 30}}}, cases)
	r := rs[0]
	if r.Exit != 0 {
		t.Fatalf("case exit %d\nstdout:\n%s\nstderr:\n%s", r.Exit, r.Stdout, r.Stderr)
	}
	var models, qoss []string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if v, ok := strings.CutPrefix(l, "vmcase: model "); ok {
			models = append(models, strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(l, "vmcase: qos "); ok {
			qoss = append(qoss, strings.TrimSpace(v))
		}
	}
	if len(models) != 5 || len(qoss) != 5 {
		t.Fatalf("%d model and %d qos lines, want 5 each:\n%s", len(models), len(qoss), r.Stderr)
	}
	t.Logf("lines: before %q %q; applied %q %q", models[0], qoss[0], models[1], qoss[1])
	// Before: the kernel lists no line for the drive.
	if models[0] != "" || qoss[0] != "" {
		t.Errorf("lines before any apply: %q %q", models[0], qoss[0])
	}
	// Applied: ctrl=user, the model iocost model derived, QoS enabled.
	if !strings.Contains(models[1], "ctrl=user model=linear") || !strings.Contains(qoss[1], "enable=1 ctrl=user rpct=95.00") {
		t.Errorf("applied: %q %q", models[1], qoss[1])
	}
	if !strings.Contains(r.Stdout, "read back:") {
		t.Errorf("apply did not read back:\n%s", r.Stdout)
	}
	// Reset from no line: the kernel's defaults.
	if !strings.Contains(models[2], "ctrl=auto") || !strings.Contains(qoss[2], "enable=0 ctrl=auto") {
		t.Errorf("reset from nothing: %q %q", models[2], qoss[2])
	}
	// Reset from lines: byte for byte.
	// The second apply's --vrate 1-100 is in the QoS line it leaves.
	if !strings.Contains(qoss[3], "min=1.00 max=100.00") {
		t.Errorf("apply --vrate 1-100: %q", qoss[3])
	}
	if models[4] != models[2] || qoss[4] != qoss[2] || models[3] == models[2] {
		t.Errorf("reset: %q %q, want %q %q (applied between: %q)", models[4], qoss[4], models[2], qoss[2], models[3])
	}
	for _, want := range []string{"show without io.cost exit 2"} {
		if !strings.Contains(r.Stderr, "vmcase: "+want) {
			t.Errorf("no %q in:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "state left") || strings.Contains(r.Stderr, "kernel took min>max") {
		t.Errorf("state or kernel:\n%s", r.Stderr)
	}
}
