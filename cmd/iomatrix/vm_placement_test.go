package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/internal/vmtest"
)

// Where iomatrix's cgroups go on a pure cgroup v2 kernel, with the real io
// controller (docs/caps.md, "Where the cgroups live on cgroup v2"), and
// that every run leaves the tree as it found it: the same directories and
// the same cgroup.subtree_control in each, the real root's included.
// One boot for every case.

// placementPrelude is sourced by every case: the tree's snapshot, and a
// watcher that reports where a run's cgroups are while it runs.
const placementPrelude = vmTreePrelude + `
# watch DIR: while iomatrix runs, once its capped worker is in a cgroup
# below DIR, report every cgroup there that holds a process, with its
# io.max. (cgroupfs files have no size: test -s cannot tell.)
populated() { for d in $(find $1 -mindepth 1 -type d 2>/dev/null); do [ -n "$(cat $d/cgroup.procs)" ] && echo $d; done; }
watch() {
	for i in $(seq 200); do
		if populated $1 | grep -qv -- -self; then
			for d in $(populated $1); do echo "PLACED ${d#$CG} procs=$(cat $d/cgroup.procs | wc -l) io.max=[$(cat $d/io.max 2>/dev/null)]"; done
			return
		fi
		sleep 0.05
	done
	echo "PLACED nowhere below $1"
}
# end RC [UNDO...]: the case's verdict lines, then UNDO (its own
# scaffolding, after the tree was compared); the case fails with RC, or 1
# if the tree changed.
end() {
	rc=$1; shift
	echo "EXIT $rc"
	as_found; t=$?
	"$@"
	[ $t = 0 ] || exit 1
	exit $rc
}
RUN="iomatrix run /dev/nvme0n1 --cap riops=300 --runtime 2s --ramp 0.5s"
# NS: what a container's shell does first: cgroup2 mounted afresh, so that
# its root is the namespace's (which holds guesttool, the shell and more).
NS="umount $CG && mount -t cgroup2 none $CG && echo NSROOT \$(cat /proc/self/cgroup) type=\$(cat $CG/cgroup.type) procs=\$(cat $CG/cgroup.procs | wc -l)"
`

func TestVMPlacement(t *testing.T) {
	testenv.Integration(t) // before the guest tool's build: -short builds nothing
	testenv.Root(t)
	profile := "name: one\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 8}\n"
	cases := []vmtest.Case{
		// 1. From the real root: the cgroups go to /iomatrix, and the
		// root's subtree_control is empty again after each command.
		{Name: "root-run", Script: `found
watch $CG/iomatrix & w=$!
$RUN -o /tmp/run.json; rc=$?
wait $w
grep -o '"cgroup": *"[^"]*"' /tmp/run.json
end $rc`},
		{Name: "root-verify", Script: `found
printf '` + profile + `' >/tmp/one.yaml
watch $CG/iomatrix & w=$!
iomatrix cap verify /dev/nvme0n1 --cap riops=400 --profile /tmp/one.yaml --runtime 1s --ramp 0.5s -o /tmp/verify.json; rc=$?
wait $w
end $rc`},
		{Name: "root-throttle", Script: `found
iomatrix throttle --cap riops=300 --device /dev/nvme0n1 -- cat /proc/self/cgroup; rc=$?
end $rc`},
		// 2. A delegated cgroup, as systemd-run --scope -p Delegate=yes
		// makes it: the host enables io and memory for the root's
		// children, the unit's cgroup carries trusted.delegate and holds
		// only iomatrix.
		{Name: "delegated", Script: `host $CG/unit
guesttool setxattr $CG/unit trusted.delegate 1 || exit 9
found
watch $CG/unit/iomatrix & w=$!
sh -c "echo \$\$ >$CG/unit/cgroup.procs; exec $RUN"; rc=$?
wait $w
end $rc unhost $CG/unit`},
		// 3. A container's view: the host enables io for the root's
		// children; the container's shell is in /box, and a new cgroup
		// namespace rooted there mounts cgroup2 afresh. Its root holds the
		// shell: refused with the rule named.
		{Name: "container-procs", Script: `host $CG/box
found
sh -c "echo \$\$ >$CG/box/cgroup.procs; exec guesttool ns sh -c '$NS && exec $RUN'"; rc=$?
end $rc unhost $CG/box`},
		// ... and once its processes (guesttool, the shell) are in a child
		// cgroup, it works, and what it enabled in the namespace's root
		// is off again.
		{Name: "container-leaf", Script: `host $CG/box $CG/box/init
found
watch $CG/box/iomatrix & w=$!
sh -c "echo \$\$ >$CG/box/cgroup.procs; exec guesttool ns sh -c '$NS && echo \$PPID >$CG/init/cgroup.procs && echo \$\$ >$CG/init/cgroup.procs && echo EMPTIED procs=\$(cat $CG/cgroup.procs | wc -l) && exec $RUN'"; rc=$?
wait $w
end $rc unhost $CG/box/init $CG/box`},
		// 4. A read-only cgroupfs, as in an unprivileged pod: a read-only
		// bind in a private mount namespace.
		{Name: "readonly", Script: `found
guesttool ns sh -c "mount --bind $CG $CG && mount -o remount,bind,ro $CG && exec $RUN"; rc=$?
end $rc`},
	}
	for i := range cases {
		cases[i].Script = placementPrelude + cases[i].Script
	}
	rs := vmtest.Boot(t, vmtest.Guest{
		Drives: []vmtest.Drive{{Size: 1 << 30}},
		Files:  map[string][]byte{"bin/guesttool": vmtest.StaticBuild(t, "./internal/vmtest/guesttool")},
	}, cases)
	// What each case must show: its exit status, and lines of its
	// output (stdout and stderr together).
	want := map[string]struct {
		exit  int
		lines []string
	}{
		"root-run": {0, []string{
			`^PLACED /iomatrix/\d+-1 procs=1 io\.max=\[259:0 rbps=max wbps=max riops=300 wiops=max\]$`,
			`^"cgroup": "/sys/fs/cgroup/iomatrix/\d+-1"$`,
			`^cgroup counted (\S+) reads, 0 writes; iomatrix completed (\S+) reads`,
		}},
		"root-verify": {0, []string{
			`^PLACED /iomatrix/\d+-1 procs=1 io\.max=\[259:0 rbps=max wbps=max riops=400 wiops=max\]$`,
			`^OK: the cap holds in 1 cell$`,
		}},
		"root-throttle": {0, []string{
			`^0::/iomatrix/\d+-1$`,
			`running cat under riops=300 on 259:0 \(cgroup v2\) \(cgroup /sys/fs/cgroup/iomatrix/\d+-1\)$`,
		}},
		"delegated": {0, []string{
			`^PLACED /unit/iomatrix/\d+-self procs=1 io\.max=\[\]$`, // iomatrix itself, in its leaf
			`^PLACED /unit/iomatrix/\d+-1 procs=1 io\.max=\[259:0 rbps=max wbps=max riops=300 wiops=max\]$`,
			`^capped: riops=300 on 259:0 \(cgroup v2\), cgroup /sys/fs/cgroup/unit/iomatrix/\d+-1$`,
		}},
		"container-procs": {2, []string{
			`^NSROOT 0::/ type=domain procs=\d+$`, // a namespace's root, not the real one
			`^iomatrix: the no-internal-process rule of cgroup v2 forbids it: cgroup /sys/fs/cgroup holds \d+ process\(es\)`,
		}},
		"container-leaf": {0, []string{
			`^NSROOT 0::/ type=domain procs=\d+$`,
			`^EMPTIED procs=0$`,
			`^PLACED /box/iomatrix/\d+-1 procs=1 io\.max=\[259:0 rbps=max wbps=max riops=300 wiops=max\]$`,
			`^capped: riops=300 on 259:0 \(cgroup v2\), cgroup /sys/fs/cgroup/iomatrix/\d+-1$`, // as the container sees it
		}},
		"readonly": {4, []string{`^iomatrix: cgroup /sys/fs/cgroup is on a read-only cgroupfs`}},
	}
	for _, r := range rs {
		w := want[r.Name]
		out := r.Stdout + r.Stderr
		ok := r.Exit == w.exit
		var shown []string
		tree := `^TREE as found, root \[\]$` // a fresh guest's
		if strings.HasPrefix(r.Name, "delegated") || strings.HasPrefix(r.Name, "container") {
			tree = `^TREE as found, root \[io memory\]$` // the case's host enabled them
		}
		for _, re := range append(w.lines, tree) {
			m := regexp.MustCompile("(?m)" + re).FindStringSubmatch(out)
			switch {
			case m == nil:
				ok = false
				t.Errorf("%s: no line matching %s", r.Name, re)
			case len(m) == 3 && m[1] != m[2]:
				ok = false
				t.Errorf("%s: %s: the counts differ", r.Name, m[0])
			default:
				shown = append(shown, m[0])
			}
		}
		if r.Exit != w.exit {
			t.Errorf("%s: exit %d, want %d", r.Name, r.Exit, w.exit)
		}
		if ok {
			t.Logf("%s: exit %d in %v: %s", r.Name, r.Exit, r.Elapsed.Round(10*time.Millisecond), strings.Join(shown, " | "))
		} else {
			t.Logf("%s: exit %d in %v\nstdout:\n%s\nstderr:\n%s", r.Name, r.Exit, r.Elapsed, r.Stdout, r.Stderr)
		}
	}
}
