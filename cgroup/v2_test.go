package cgroup

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

// The tree mechanics of cgroup v2, for real: this machine's v2 hierarchy
// has no io controller, but offers hugetlb, and the kernel enforces the
// same rules for it (no internal processes, controllers offered only
// where the parent enables them). Only io.max and io.stat stay on fixtures.

const standIn = "hugetlb"

// realV2 is the real v2 hierarchy with hugetlb in io's place, as this
// process sees it (in the root cgroup here and in CI).
func realV2(t *testing.T) Controller {
	t.Helper()
	mnt := testenv.CgroupV2(t, standIn)
	return Controller{Mode: Hybrid, Version: 2, Root: filepath.Dir(mnt), Dir: mnt, Name: standIn, Extra: []string{"memory"}, Self: selfCgroup(sysfs.Default())}
}

// testCgroup makes a cgroup for a test below dir, removed when it ends.
func testCgroup(t *testing.T, mnt, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("iomatrix-test-%s-%d", name, os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.RemoveCgroup(t, mnt, p) })
	return p
}

// sleeper is a process to put in cgroups, killed when the test ends.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // killed: its end says nothing
	return cmd.Process.Pid
}

func moveTo(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("move %d into %s: %v", pid, dir, err)
	}
}

func enabledIn(dir string) []string {
	l, _ := readList(filepath.Join(dir, "cgroup.subtree_control"))
	return l
}

// On a plain host the cgroups go below the real root, which the rule
// exempts; the controller is on for their parents, a process can be put
// in, a group that still holds one is reported when it cannot go, and
// nothing stays behind.
func TestV2RealRoot(t *testing.T) {
	c := realV2(t)
	testenv.Require(t, c.Self == "/", "this test process is not in the root cgroup of the v2 hierarchy")
	p, err := c.Placement()
	if err != nil || p.Dir != c.Dir || p.Delegated {
		t.Fatalf("placement %+v %v, want the root %s", p, err, c.Dir)
	}
	g, err := Create(c, Limit{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.RemoveCgroup(t, c.Dir, filepath.Join(c.Dir, Parent)) })
	if filepath.Dir(g.Path) != filepath.Join(c.Dir, Parent) {
		t.Errorf("group %s, want it in %s", g.Path, filepath.Join(c.Dir, Parent))
	}
	for _, dir := range []string{c.Dir, filepath.Join(c.Dir, Parent)} {
		if !slices.Contains(enabledIn(dir), standIn) {
			t.Errorf("%s does not enable %s for its children: %q", dir, standIn, enabledIn(dir))
		}
	}
	// memory is asked for too, and absent from this hierarchy: the group
	// says what it has, for the writeback warning.
	if on := g.Enabled(); !slices.Equal(on, []string{standIn}) {
		t.Errorf("enabled %q, want only %s", on, standIn)
	}
	pid := sleeper(t)
	if err := g.AddProc(pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err == nil || !strings.Contains(err.Error(), "still capped") || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Errorf("Delete of a group holding pid %d: %v, want an error naming it", pid, err)
	}
	moveTo(t, c.Dir, pid)
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{g.Path, filepath.Join(c.Dir, Parent)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind", dir)
		}
	}
}

// The root of a cgroup namespace is a cgroup like any other: while it
// holds a process it cannot enable a controller for its children. The
// placement says so before anything is made; the kernel agrees (EBUSY);
// once the process moves into a leaf, the cgroups go there.
func TestV2NamespaceRootHoldingProcesses(t *testing.T) {
	c := realV2(t)
	if err := c.enable(c.Dir, []string{standIn}); err != nil {
		t.Fatal(err)
	}
	nsRoot := testCgroup(t, c.Dir, c.Dir, "nsroot")
	pid := sleeper(t)
	moveTo(t, nsRoot, pid)
	// As a namespace rooted there sees it.
	ns := c
	ns.Dir, ns.Self = nsRoot, "/"
	_, err := ns.Placement()
	if !errors.Is(err, ErrInternalProcess) || !strings.Contains(err.Error(), strconv.Itoa(pid)) || !strings.Contains(err.Error(), "leaf") {
		t.Fatalf("placement in a namespace root holding pid %d: %v", pid, err)
	}
	if _, err := Create(ns, Limit{}); !errors.Is(err, ErrInternalProcess) {
		t.Errorf("Create: %v, want ErrInternalProcess", err)
	}
	if entries := subdirs(nsRoot); len(entries) > 0 {
		t.Errorf("a refused placement left %v", entries)
	}
	// The kernel's own answer to the same request.
	if err := ns.enable(nsRoot, []string{standIn}); !errors.Is(err, ErrInternalProcess) || !errors.Is(err, unix.EBUSY) && !strings.Contains(err.Error(), "holds 1 process") {
		t.Errorf("enable in a cgroup holding a process: %v, want the rule", err)
	}
	leaf := filepath.Join(nsRoot, "leaf")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	moveTo(t, leaf, pid)
	g, err := Create(ns, Limit{})
	if err != nil {
		t.Fatalf("Create once the namespace root is empty: %v", err)
	}
	if filepath.Dir(g.Path) != filepath.Join(nsRoot, Parent) {
		t.Errorf("group %s, want it in %s", g.Path, filepath.Join(nsRoot, Parent))
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	// Nothing left, and the namespace's root gives up the controller it
	// was given: otherwise no process could ever join it again.
	if entries := subdirs(nsRoot); !slices.Equal(entries, []string{"leaf"}) || len(enabledIn(nsRoot)) > 0 {
		t.Errorf("left %v beside the leaf; the root enables %q", entries, enabledIn(nsRoot))
	}
	// A joined cgroup that enables controllers for its children cannot
	// take the worker: refused with the rule named.
	if err := ns.enable(nsRoot, []string{standIn}); err != nil {
		t.Fatal(err)
	}
	if _, err := Join(ns, nsRoot, sysfs.DevNum{Major: 254}); !errors.Is(err, ErrInternalProcess) {
		t.Errorf("Join of a cgroup with controllers on for its children: %v", err)
	}
}

// A cgroup systemd delegated to this process's unit (marked with the
// trusted.delegate xattr): iomatrix keeps to it, moving itself into a
// leaf first, and puts everything back when its cgroups are gone.
func TestV2Delegated(t *testing.T) {
	c := realV2(t)
	if err := c.enable(c.Dir, []string{standIn}); err != nil {
		t.Fatal(err)
	}
	unit := testCgroup(t, c.Dir, c.Dir, "unit")
	if err := unix.Setxattr(unit, "trusted.delegate", []byte("1"), 0); err != nil {
		testenv.Require(t, false, "cgroupfs takes no trusted xattr here: "+err.Error())
	}
	self := os.Getpid()
	moveTo(t, unit, self)
	t.Cleanup(func() {
		testenv.Must(t, os.WriteFile(filepath.Join(c.Dir, "cgroup.procs"), []byte(strconv.Itoa(self)), 0))
	})
	d := c
	d.Self = "/" + filepath.Base(unit)
	p, err := d.Placement()
	if err != nil || p.Dir != unit || !p.Delegated {
		t.Fatalf("placement %+v %v, want the delegated %s", p, err, unit)
	}
	g, err := Create(d, Limit{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := filepath.Join(unit, Parent, fmt.Sprintf("%d-self", self))
	if own := selfCgroup(sysfs.Default()); own != strings.TrimPrefix(leaf, c.Dir) {
		t.Errorf("this process is in %s, want its leaf %s", own, leaf)
	}
	if filepath.Dir(g.Path) != filepath.Join(unit, Parent) || !slices.Contains(enabledIn(unit), standIn) {
		t.Errorf("group %s, %s enables %q", g.Path, unit, enabledIn(unit))
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if own := selfCgroup(sysfs.Default()); own != d.Self || len(subdirs(unit)) > 0 || len(enabledIn(unit)) > 0 {
		t.Errorf("after Delete: in %s (want %s), %s holds %v and enables %q", own, d.Self, unit, subdirs(unit), enabledIn(unit))
	}
	// Another process in the unit: its cgroup cannot give its children a
	// controller. Refused, and this process is back where it was.
	moveTo(t, unit, sleeper(t))
	if _, err := Create(d, Limit{}); !errors.Is(err, ErrInternalProcess) {
		t.Errorf("Create beside another process of the unit: %v, want ErrInternalProcess", err)
	}
	if own := selfCgroup(sysfs.Default()); own != d.Self || len(subdirs(unit)) > 0 {
		t.Errorf("after the refusal: in %s, %s holds %v", own, unit, subdirs(unit))
	}
}

// Runs that start and end together share the iomatrix directory: the
// last one out removes it while another makes its group; neither fails.
func TestV2ConcurrentRunsShareTheParent(t *testing.T) {
	c := realV2(t)
	testenv.Require(t, c.Self == "/", "this test process is not in the root cgroup of the v2 hierarchy")
	t.Cleanup(func() { testenv.RemoveCgroup(t, c.Dir, filepath.Join(c.Dir, Parent)) })
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				g, err := Create(c, Limit{})
				if err != nil {
					errs <- err
					return
				}
				if err := g.Delete(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, Parent)); !os.IsNotExist(err) {
		t.Errorf("%s left behind", filepath.Join(c.Dir, Parent))
	}
}

func subdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// The real root is exempt from the rule, but a run still gives back what
// it enabled there: the tree is left as found. What another user of the
// controller set up meanwhile (a limit in a cgroup beside iomatrix's)
// keeps the controller on, since turning it off would drop that limit.
func TestV2RealRootGivesBackWhatItEnabled(t *testing.T) {
	c := realV2(t)
	testenv.Require(t, c.Self == "/", "this test process is not in the root cgroup of the v2 hierarchy")
	found := enabledIn(c.Dir)
	t.Cleanup(func() {
		testenv.RemoveCgroup(t, c.Dir, filepath.Join(c.Dir, Parent))
		if now := enabledIn(c.Dir); !slices.Equal(now, found) {
			_ = os.WriteFile(filepath.Join(c.Dir, "cgroup.subtree_control"), []byte("-"+standIn), 0) // as found, for the tests that follow
		}
	})
	if slices.Contains(found, standIn) {
		// Left on by another test: off, so that this run is the one that
		// enables it.
		if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.subtree_control"), []byte("-"+standIn), 0); err != nil {
			testenv.Require(t, false, "the root's "+standIn+" is in use: "+err.Error())
		}
		found = enabledIn(c.Dir)
	}
	for range 2 { // the second run finds the note gone, and enables again
		g, err := Create(c, Limit{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(enabledIn(c.Dir), standIn) {
			t.Fatalf("the root does not enable %s while a group exists: %q", standIn, enabledIn(c.Dir))
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
		if now := enabledIn(c.Dir); !slices.Equal(now, found) {
			t.Fatalf("the root enables %q after the run, %q before", now, found)
		}
	}

	g, err := Create(c, Limit{})
	if err != nil {
		t.Fatal(err)
	}
	other := testCgroup(t, c.Dir, c.Dir, "other")
	limit := limitFile(t, other)
	if err := os.WriteFile(limit, []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(enabledIn(c.Dir), standIn) {
		t.Errorf("the root gave up %s although %s sets %s", standIn, other, filepath.Base(limit))
	}
	if b, err := os.ReadFile(limit); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("%s: %q %v, want the other user's 0", limit, b, err)
	}
}

// limitFile is a hugetlb limit of dir (hugetlb.<size>.max).
func limitFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, standIn+".*.max"))
	for _, f := range m {
		if !strings.Contains(f, ".rsvd.") {
			return f
		}
	}
	t.Fatalf("no %s.*.max in %s", standIn, dir)
	return ""
}

// A controller's settings are its files that can be read and written,
// less those that hold figures: a cgroup's pressure (the kernel's 6.1
// guest showed io.pressure and memory.pressure differing between a busy
// cgroup and a fresh one, though nobody had configured either).
func TestSettingsAreWhatCanBeConfigured(t *testing.T) {
	dir := t.TempDir()
	for name, perm := range map[string]os.FileMode{
		"io.max": 0o644, "io.weight": 0o644, "io.pressure": 0o644, "io.stat": 0o444,
		"memory.max": 0o644, "memory.peak": 0o644, "memory.reclaim": 0o200, "cpu.max": 0o644,
	} {
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), []byte(name), perm))
	}
	got := slices.Sorted(maps.Keys(settings(dir, []string{"io", "memory"})))
	if want := []string{"io.max", "io.weight", "memory.max"}; !slices.Equal(got, want) {
		t.Errorf("settings %q, want %q", got, want)
	}
}
