package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/session"
)

// The tests below run iomatrix in a cgroup namespace on this machine's
// real cgroup v2 hierarchy, where hugetlb stands in for io (which the
// hierarchy does not offer): the kernel enforces the same rules on it.
func init() {
	if c := os.Getenv("IOMATRIX_TEST_CGROUP_CONTROLLER"); c != "" {
		session.DetectCgroups = func(sys sysfs.FS) (cgroup.Controller, error) { return cgroup.DetectFor(sys, cgroup.DefaultRoot, c) }
	}
}

const v2StandIn = "hugetlb"

// inCgroupNamespace runs iomatrix with args in a cgroup namespace rooted
// at nsRoot (a cgroup made for the test, holding the namespace's shell),
// in a private mount namespace where the v2 hierarchy is mounted afresh
// (with mountOpts) so that its root is the namespace's, and v1 blkio is
// gone, so that iomatrix takes v2. prelude runs in the namespace first.
func inCgroupNamespace(t *testing.T, mnt, nsRoot, mountOpts, prelude string, env []string, args ...string) cmdResult {
	t.Helper()
	testenv.Command(t, "unshare")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inner := `set -e
umount /sys/fs/cgroup/blkio 2>/dev/null || true
umount -l "$MNT"
mount -t cgroup2 -o "$OPTS" none "$MNT"
` + prelude + `
exec "$@"`
	outer := `echo $$ > "$NSROOT/cgroup.procs" && exec unshare --cgroup --mount --propagation private sh -c "$INNER" sh "$@"`
	cmd := exec.Command("sh", append([]string{"-c", outer, "sh", exe}, args...)...)
	cmd.Env = append(os.Environ(), "IOMATRIX_TEST_MAIN=1", "IOMATRIX_TEST_CGROUP_CONTROLLER="+v2StandIn,
		"NSROOT="+nsRoot, "MNT="+mnt, "OPTS="+mountOpts, "INNER="+inner)
	cmd.Env = append(cmd.Env, env...)
	return runIomatrix(t, cmd)
}

// nsCgroup makes the cgroup a test namespace is rooted at, below parent,
// removed when the test ends.
func nsCgroup(t *testing.T, mnt, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, fmt.Sprintf("iomatrix-test-%s-%d", name, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.RemoveCgroup(t, mnt, dir) })
	return dir
}

func enableFor(t *testing.T, dir, controller string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+controller), 0); err != nil {
		t.Fatalf("enable %s in %s: %v", controller, dir, err)
	}
}

func cgroupSubdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// In a container whose cgroup (the namespace's "/") holds its processes,
// `run --cap` is refused before any I/O, with the rule named, exit 2,
// nothing made; once the processes live in a leaf, it runs in a cgroup
// of its own beside them, without clone3, and leaves nothing behind. A
// read-only cgroupfs is refused with exit 4, a tree without the
// controller with exit 2.
func TestV2CgroupNamespace(t *testing.T) {
	mnt := testenv.CgroupV2(t, v2StandIn)
	enableFor(t, mnt, v2StandIn)
	dir := t.TempDir()
	target := filepath.Join(dir, "ns.dat")
	capped := []string{"run", target, "--size", "16MiB", "--cap", "riops=2000", "--runtime", "300ms", "--ramp", "250ms"}

	t.Run("root holding processes", func(t *testing.T) {
		nsRoot := nsCgroup(t, mnt, mnt, "ns")
		r := inCgroupNamespace(t, mnt, nsRoot, "rw", "", nil, capped...)
		checkRefused(t, r, "no-internal-process rule")
		if !strings.Contains(r.stderr, "holds") || !strings.Contains(r.stderr, "leaf") {
			t.Errorf("the refusal does not say what to do: %s", r.stderr)
		}
		if l := cgroupSubdirs(nsRoot); len(l) > 0 {
			t.Errorf("left %v in the namespace's cgroup", l)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Error("the refused run laid out its target")
		}
	})
	t.Run("processes in a leaf", func(t *testing.T) {
		nsRoot := nsCgroup(t, mnt, mnt, "ns-leaf")
		leaf := `mkdir "$MNT/leaf"; echo $$ > "$MNT/leaf/cgroup.procs"`
		r := inCgroupNamespace(t, mnt, nsRoot, "rw", leaf, []string{"IOMATRIX_TEST_DENY_CLONE3_ENOSYS=1"}, append(capped, "--format", "json")...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, `"cgroup_version": 2`) || !strings.Contains(r.stdout, "/"+cgroup.Parent+"/") {
			t.Errorf("not run in a v2 cgroup of its own: %s", r.stdout)
		}
		if l := cgroupSubdirs(nsRoot); len(l) != 1 || l[0] != "leaf" {
			t.Errorf("left %v beside the leaf", l)
		}
		// throttle there: v2 charges writeback only with memory, which this
		// hierarchy does not offer: said as on v1.
		r = inCgroupNamespace(t, mnt, nsRoot, "rw", `echo $$ > "$MNT/leaf/cgroup.procs"`, nil,
			"throttle", "--cap", "wiops=500", "--device", dir, "--", "true")
		if r.code != 0 || !strings.Contains(r.stderr, "cgroup v2 charges buffered writes") {
			t.Errorf("throttle on v2 without memory: exit %d, %s", r.code, r.stderr)
		}
	})
	t.Run("read-only cgroupfs", func(t *testing.T) {
		nsRoot := nsCgroup(t, mnt, mnt, "ns-ro")
		r := inCgroupNamespace(t, mnt, nsRoot, "ro", "", nil, capped...)
		if r.code != exitPrivilege || !strings.Contains(r.stderr, "read-only") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("exit %d, want 4 with one line naming the read-only cgroupfs: %s", r.code, r.stderr)
		}
	})
	t.Run("controller not delegated", func(t *testing.T) {
		parent := nsCgroup(t, mnt, mnt, "no-deleg")
		nsRoot := nsCgroup(t, mnt, parent, "ns")
		r := inCgroupNamespace(t, mnt, nsRoot, "rw", "", nil, capped...)
		checkRefused(t, r, "no "+v2StandIn+" controller")
		if l := cgroupSubdirs(nsRoot); len(l) > 0 {
			t.Errorf("left %v", l)
		}
	})
}
