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
