package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/vmtest"
	"github.com/iomatrix/iomatrix/results"
)

// Sharing a device under iocost, on a real cgroup v2 kernel: the model of
// the iocost profile, checked on the aggressor's shape, applied with its
// QoS's latency targets and a vrate free to go as low as they ask (1-100:
// at rd-agent's floor of 60 the controller held nothing back here, see
// docs/sharing.md); then isolate --control iocost, the victim 4K random
// reads at QD1 and the aggressor 16K random writes at QD32, weights
// 500:100. Its phases, its figures and the controller's own (the vrate,
// the device time charged) are checked; its gains are not, since none
// held in every run (docs/sharing.md). The root's io.cost.* lines end as
// they began, and the refusals the guest can produce are checked: iocost
// not enabled, not root, and a device without blk-mq (an NVMe multipath
// head).
func TestVMIOCostShare(t *testing.T) {
	const script = `D=$(cat /sys/block/nvme0n1/dev)
say() { echo "vmcase: $*" >&2; }
lines() { say "$1 $(grep "^$D " /sys/fs/cgroup/io.cost.model) | $(grep "^$D " /sys/fs/cgroup/io.cost.qos)"; }
R="--size 512m --runtime 1s --ramp 0.2s"
# The kernel lists a device once iocost was first set on it, and keeps
# the line: from then on, the lines can be put back byte for byte.
echo "$D enable=0" >/sys/fs/cgroup/io.cost.qos
lines before
iomatrix isolate /dev/nvme0n1 --size 512m --allow-destructive --control iocost --runtime 1s 2>/tmp/e >/dev/null; say "not enabled exit $? $(cat /tmp/e)"
iomatrix sweep /dev/nvme0n1 --profile iocost $R --allow-destructive -o /tmp/ic.json >/dev/null 2>/tmp/e || { say "sweep failed, exit $?: $(tr '\r' '\n' </tmp/e | tail -5 | tr '\n' ' ')"; exit 3; }
iomatrix run /dev/nvme0n1 --rw randwrite --bs 16k --qd 32 $R --allow-destructive -o /tmp/agg.json >/dev/null 2>/tmp/e || { say "run failed, exit $?: $(tr '\r' '\n' </tmp/e | tail -5 | tr '\n' ' ')"; exit 3; }
F="--from /tmp/ic.json --from /tmp/agg.json"
guesttool as 65534 iomatrix iocost apply /dev/nvme0n1 $F --state /tmp/nobody.json >/dev/null 2>/tmp/e; say "not root exit $? $(cat /tmp/e)"
N=$(cat /sys/block/nvme1n1/dev)
[ -e /sys/dev/block/$N/mq ] && say "the multipath head has mq"
iomatrix iocost apply /dev/nvme1n1 $F --state /tmp/mp.json >/dev/null 2>/tmp/e; say "not blk-mq exit $? $(cat /tmp/e)"
iomatrix iocost apply /dev/nvme0n1 $F --vrate honest --dry-run 2>&1 >/dev/null | grep scaled >&2
iomatrix iocost apply /dev/nvme0n1 $F --vrate 1-100 --state /tmp/st.json >&2 || exit 4
lines applied
iomatrix isolate /dev/nvme0n1 --size 512m --allow-destructive --control iocost --runtime 2s --ramp 1s --iomax-tries 3 --format json; say "isolate exit $?"
lines isolated
iomatrix iocost reset /dev/nvme0n1 --state /tmp/st.json >/dev/null || exit 5
lines reset
[ -e /sys/fs/cgroup/iomatrix ] && say "cgroups left: [$(ls /sys/fs/cgroup/iomatrix)]"
exit 0
`
	rs := vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 1 << 30}, {Size: 64 << 20, Multipath: true}},
		Files: map[string][]byte{"bin/guesttool": vmtest.StaticBuild(t, "./internal/vmtest/guesttool")}},
		[]vmtest.Case{{Name: "share", Script: script}})
	r := rs[0]
	if r.Exit != 0 {
		t.Fatalf("case exit %d\nstdout:\n%s\nstderr:\n%s", r.Exit, r.Stdout, r.Stderr)
	}
	said := func(key string) string { return vmcaseLine(r, key) }
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", r.Stderr)
		}
	}()
	// Refusals: each exit status and its reason, in one line.
	for _, c := range []struct{ prefix, want string }{
		{"enabled exit 2 ", "iocost is not enabled on"},
		{"root exit 4 ", "root"},
		{"blk-mq exit 2 ", "is not blk-mq"},
	} {
		found := false
		for _, l := range strings.Split(r.Stderr, "\n") {
			if v, ok := strings.CutPrefix(l, "vmcase: not "); ok && strings.HasPrefix(v, c.prefix) && strings.Contains(v, c.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no refusal %q naming %q", "not "+c.prefix, c.want)
		}
	}
	if said("the multipath head") != "" {
		t.Errorf("the multipath head has blk-mq: the refusal was not of a bio-based device")
	}
	// The lines: applied with ctrl=user and the honest vrate, unchanged by
	// isolate, and back as they were after reset.
	t.Logf("lines: before %q; applied %q", said("before"), said("applied"))
	if !strings.Contains(said("applied"), "ctrl=user model=linear") || !strings.Contains(said("applied"), "enable=1 ctrl=user rpct=95.00") || !strings.Contains(said("applied"), "min=1.00 max=100.00") {
		t.Errorf("applied: %q, want the model and the QoS with --vrate 1-100", said("applied"))
	}
	if said("isolated") != said("applied") {
		t.Errorf("isolate left %q, found %q", said("isolated"), said("applied"))
	}
	if said("reset") != said("before") {
		t.Errorf("reset left %q, found %q", said("reset"), said("before"))
	}
	if v := said("cgroups left:"); v != "" {
		t.Errorf("cgroups left: %s", v)
	}
	// isolate's figures.
	var rep results.IsolateReport
	if err := json.Unmarshal([]byte(r.Stdout[strings.Index(r.Stdout, "{"):]), &rep); err != nil || rep.IOCost == nil {
		t.Fatalf("isolate (%s): not a report (%v):\n%s", said("isolate"), err, r.Stdout)
	}
	ic := rep.IOCost
	for _, p := range rep.Phases {
		agg := 0.0
		if p.Aggressor != nil {
			agg = p.Aggressor.Total.IOPS
		}
		ctl := ""
		if c := p.Controller; c != nil {
			ctl = fmt.Sprintf("; vrate %.2f %%, charged victim %.0f ms, aggressor %.0f ms", c.VRatePct, c.VictimUsageMS, c.AggressorUsageMS)
		}
		t.Logf("%-28s victim %6.0f IOPS, aggressor %6.0f  (%s%s)", p.Name, p.Victim.Total.IOPS, agg, p.Control, ctl)
		// The controller's figures: in every phase with iocost on, and
		// only there; the vrate within --vrate 1-100, device time charged
		// to whoever ran, and none to the idle victim (iocost was off
		// before its phase; after a phase with it on, the last period's
		// charge may land in the next).
		on := strings.HasPrefix(p.Control, "iocost on")
		c := p.Controller
		switch {
		case on && c == nil:
			t.Errorf("%s: iocost on, no controller figures", p.Name)
		case !on && c != nil:
			t.Errorf("%s: iocost off, controller figures %+v", p.Name, *c)
		case on && (c.VRatePct < 1 || c.VRatePct > 100 || (c.VictimUsageMS > 0) == p.VictimIdle || p.Aggressor != nil && c.AggressorUsageMS <= 0):
			t.Errorf("%s: controller figures %+v", p.Name, *c)
		}
	}
	t.Logf("gain ×%.2f, work conservation %.0f %%, io.max phase %q, pair ×%.2f of it; idle victim: aggressor %.0f weighted, %.0f io.max (×%.2f); %s",
		ic.Gain, 100*ic.Conservation, ic.IOMaxPhase, ic.PairVsIOMax, ic.IdleWeighted, ic.IdleIOMax, ic.IdleGain, rep.Verdict)
	if ic.VictimWeight != 500 || ic.AggressorWeight != 100 || rep.Phases[0].Victim.Name != "rand-4k-r100-qd1" || rep.Phases[1].Aggressor.Name != "rand-16k-r0-qd32" {
		t.Errorf("weights %d:%d, victim %s, aggressor %s", ic.VictimWeight, ic.AggressorWeight, rep.Phases[0].Victim.Name, rep.Phases[1].Aggressor.Name)
	}
	// Not asserted, since they did not hold in every run (docs/sharing.md):
	// the victim's gain beside the weighted aggressor over the
	// uncontrolled one, ×1.06 to ×1.85 on a quiet host but ×0.94 to ×1.22
	// with the host's two CPUs busy besides (how far the controller has
	// brought the vrate down when a phase starts varies with the
	// emulation's timing); with the victim idle, iocost let the aggressor
	// do ×0.93 to ×1.99 what the io.max did; and beside each other the
	// pair did ×0.79 to ×1.21 of its IOPS under the io.max that protected
	// the victim as well. Their figures are checked for being figures.
	if ic.Gain <= 0 || ic.IdleGain <= 0 || ic.IOMaxPhase == "" && !strings.Contains(strings.Join(rep.Notes, " "), "no io.max tried") {
		t.Errorf("no gain (×%.2f), idle-victim figure (×%.2f) or io.max comparison (%q, notes %q)", ic.Gain, ic.IdleGain, ic.IOMaxPhase, rep.Notes)
	}
}
