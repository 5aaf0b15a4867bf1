package main

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/vmtest"
)

// The tests named TestVM* boot a pure cgroup v2 guest (internal/vmtest).
// They live in this package, whose tests run one at a time, so that the
// emulator never takes the CPUs from under another package's
// timing-sensitive tests.

// One boot: the guest is a pure cgroup v2 host, its cases report back
// framed, and a failing case's status and stderr arrive intact.
func TestVMGuestBoots(t *testing.T) {
	rs := vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 256 << 20}}}, []vmtest.Case{
		{Name: "controllers", Script: "cat /sys/fs/cgroup/cgroup.controllers; test -b /dev/nvme0n1 && echo nvme; iomatrix --version"},
		{Name: "fails", Script: "echo to stderr >&2; exit 7"},
	})
	if !strings.Contains(rs[0].Stdout, "io") || !strings.Contains(rs[0].Stdout, "memory") || !strings.Contains(rs[0].Stdout, "nvme") ||
		!strings.Contains(rs[0].Stdout, "iomatrix") || rs[0].Exit != 0 {
		t.Errorf("controllers: exit %d\n%s%s", rs[0].Exit, rs[0].Stdout, rs[0].Stderr)
	}
	if rs[1].Exit != 7 || rs[1].Stderr != "to stderr\n" {
		t.Errorf("fails: %+v", rs[1])
	}
}

// vmTreePrelude is shell for cases that must leave the guest's cgroup
// tree as they found it: found takes the tree's snapshot (every
// directory with what it enables for its children), as_found prints the
// verdict on it and fails if it changed. host DIR... is the host's part
// of a case, as systemd or a container runtime would do it: io for the
// root's children, and memory where the kernel has it (cgroup writeback
// needs both), then the cgroups DIR; unhost undoes it.
const vmTreePrelude = `CG=/sys/fs/cgroup
tree() { find $CG -type d | sort | while read d; do echo "$d [$(cat $d/cgroup.subtree_control)]"; done; }
found() { tree >/tmp/tree.found; }
as_found() {
	tree >/tmp/tree.now
	if cmp -s /tmp/tree.found /tmp/tree.now; then echo "TREE as found, root [$(cat $CG/cgroup.subtree_control)]"; else echo "TREE changed"; diff /tmp/tree.found /tmp/tree.now; return 1; fi
}
ctls() { for c in io memory; do grep -qw $c $CG/cgroup.controllers && echo -n "$1$c "; done; }
host() { echo "$(ctls +)" >$CG/cgroup.subtree_control && mkdir "$@"; }
unhost() { [ $# = 0 ] || rmdir "$@"; echo "$(ctls -)" >$CG/cgroup.subtree_control; }
`

// vmHoldRun is shell with which a case holds an iomatrix run while it
// reads what the run's cgroup holds, instead of hoping that the run,
// which lasts some seconds, has not ended yet on a slow guest. hold PID
// waits until the run's capped child is in a cgroup below
// /sys/fs/cgroup/iomatrix, stops the run's own process (SIGSTOP), waits
// until every thread of it is stopped, and succeeds if the child is
// still there: the run's process is what removes the cgroup, once its
// child's pattern is over, so from then on nothing the case reads of the
// cgroup can race the run's end (and a guest so slow that the pattern
// ended first fails hold, never the check). The child, which measures,
// runs on, and the run's figures are its own; the counts of the cgroup,
// which the run reads after its child's pattern, wait with it.
// release PID lets the run go on.
const vmHoldRun = `stopped() { ! grep -qsv ') T ' /proc/$1/task/*/stat; }
placed() { grep -qs . /sys/fs/cgroup/iomatrix/*/cgroup.procs; }
hold() {
	n=0; until placed; do n=$((n+1)); [ $n -lt 3000 ] || return 1; sleep 0.01; done
	kill -STOP $1 || return 1
	n=0; until stopped $1; do n=$((n+1)); [ $n -lt 500 ] || return 1; sleep 0.01; done
	placed
}
release() { kill -CONT $1; }
`
