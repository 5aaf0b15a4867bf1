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
