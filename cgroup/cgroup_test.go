package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

func TestParseCap(t *testing.T) {
	good := map[string]Limit{
		"riops=3000,wiops=3000":            {ReadIOPS: 3000, WriteIOPS: 3000},
		"wiops=500":                        {WriteIOPS: 500},
		"rbps=100MiB, wbps=1g":             {ReadBPS: 100 << 20, WriteBPS: 1 << 30},
		"RIOPS=1,wiops=2,rbps=4k,wbps=512": {ReadIOPS: 1, WriteIOPS: 2, ReadBPS: 4096, WriteBPS: 512},
	}
	for in, want := range good {
		if got, err := ParseCap(in); err != nil || got != want {
			t.Errorf("ParseCap(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"riops=-1": "riops=-1", "riops=abc": "riops=abc", "iops=5": "unknown key", "": "empty",
		"riops=0": "riops=0", "riops": "key=value", "rbps=lots": "rbps=lots", "riops=1,riops=2": "twice",
	}
	for in, mention := range bad {
		_, err := ParseCap(in)
		if !errors.Is(err, ErrBadCap) || !strings.Contains(err.Error(), mention) {
			t.Errorf("ParseCap(%q) error %v, want one naming %q", in, err, mention)
		}
	}
}

func TestLimitString(t *testing.T) {
	l := Limit{Device: sysfs.DevNum{Major: 254}, ReadIOPS: 3000, WriteBPS: 1 << 20}
	if s := l.String(); s != "254:0 rbps=max wbps=1048576 riops=3000 wiops=max" {
		t.Errorf("%q", s)
	}
}

func TestParseIOMaxKernelForm(t *testing.T) {
	// What the kernel prints back after "8:16 wiops=120" and "254:0 riops=3000 rbps=2097152".
	in := "8:16 rbps=max wbps=max riops=max wiops=120\n254:0 rbps=2097152 wbps=max riops=3000 wiops=max\n"
	m, err := ParseIOMax(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := m[sysfs.DevNum{Major: 8, Minor: 16}]; got != (Limit{Device: sysfs.DevNum{Major: 8, Minor: 16}, WriteIOPS: 120}) {
		t.Errorf("8:16 %+v", got)
	}
	if got := m[sysfs.DevNum{Major: 254}]; got.ReadIOPS != 3000 || got.ReadBPS != 2097152 || got.WriteIOPS != 0 {
		t.Errorf("254:0 %+v", got)
	}
	for _, bad := range []string{"x:y riops=1\n", "8:0 riops\n", "8:0 riops=lots\n"} {
		if _, err := ParseIOMax(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCounters(t *testing.T) {
	st, err := ParseIOStat(strings.NewReader("254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=1048576 dios=3\n7:0 rbytes=0 wbytes=0 rios=0 wios=0\n"))
	if err != nil || st[sysfs.DevNum{Major: 254}] != (Counters{ReadIOs: 1, WriteIOs: 2, ReadBytes: 4096, WriteBytes: 8192, DiscardIOs: 3, DiscardBytes: 1 << 20}) {
		t.Errorf("io.stat %+v %v", st, err)
	}
	sv, err := ParseV1Serviced(strings.NewReader("7:0 Read 141852\n7:0 Write 61094\n7:0 Sync 202946\n7:0 Async 0\n7:0 Discard 5\n7:0 Total 202951\nTotal 202951\n"))
	if err != nil || sv[sysfs.DevNum{Major: 7}] != (V1Ops{Read: 141852, Write: 61094, Discard: 5}) {
		t.Errorf("io_serviced %+v %v", sv, err)
	}
}

// fakeV2 builds a unified cgroupfs tree with the io controller.
func fakeV2(t *testing.T) Controller {
	t.Helper()
	root := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), nil, 0o644))
	testenv.Must(t, os.MkdirAll(filepath.Join(root, Parent), 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(root, Parent, "cgroup.subtree_control"), nil, 0o644))
	c, err := Detect(sysfs.Default(), root)
	if err != nil || c.Mode != Unified || c.Version != 2 || c.Dir != root {
		t.Fatalf("detect fake v2: %+v %v", c, err)
	}
	return c
}

func TestV2FakeTree(t *testing.T) {
	ctrl := fakeV2(t)
	l := Limit{Device: sysfs.DevNum{Major: 254}, ReadIOPS: 3000, WriteIOPS: 1000}
	// A directory made in a fake tree gets no io.max, as on a kernel
	// built without CONFIG_BLK_DEV_THROTTLING: refused as such (not as a
	// lack of privilege), nothing left.
	if g, err := Create(ctrl, l); !errors.Is(err, ErrNoThrottling) {
		t.Fatalf("Create on a tree without io.max = %+v, %v; want ErrNoThrottling", g, err)
	}
	entries, _ := os.ReadDir(filepath.Join(ctrl.Dir, Parent))
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("left %s", e.Name())
		}
	}
	sub, _ := os.ReadFile(filepath.Join(ctrl.Dir, "cgroup.subtree_control"))
	if !strings.Contains(string(sub), "+io") {
		t.Errorf("io not enabled in the root's subtree_control: %q", sub)
	}
	// The kernel rewrites io.max; reading back parses, never compares text.
	mine := filepath.Join(ctrl.Dir, Parent, "1-1")
	testenv.Must(t, os.MkdirAll(mine, 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(mine, "io.max"), []byte("254:0 rbps=max wbps=max riops=3000 wiops=1000\n7:0 rbps=max wbps=max riops=5 wiops=max\n"), 0o644))
	g, err := Join(ctrl, mine, l.Device)
	if err != nil || g.Limit != l || g.Own != l {
		t.Fatalf("join %+v %v", g, err)
	}
	if got, err := g.Limits(); err != nil || got != l {
		t.Errorf("read back %+v %v", got, err)
	}
	testenv.Must(t, os.WriteFile(filepath.Join(mine, "io.stat"), []byte("254:0 rbytes=40960 wbytes=0 rios=10 wios=0 dbytes=0 dios=0\n"), 0o644))
	if c, err := g.Counters(); err != nil || c.ReadIOs != 10 || c.ReadBytes != 40960 {
		t.Errorf("counters %+v %v", c, err)
	}
	shown, err := Show(ctrl, nil)
	if err != nil || len(shown) != 2 || shown[0].Cgroup != g.Name {
		t.Errorf("show %+v %v", shown, err)
	}
	// Join reads somebody else's limits, with its ancestors', and never
	// deletes their group.
	bad := Limit{Device: sysfs.DevNum{Major: 8}, ReadIOPS: 100, WriteIOPS: 7}
	testenv.Must(t, os.MkdirAll(filepath.Join(ctrl.Dir, "elsewhere", "child"), 0o755))
	testenv.Must(t, os.WriteFile(filepath.Join(ctrl.Dir, "elsewhere", "io.max"), []byte("8:0 riops=5 wiops=max rbps=max wbps=max\n"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(ctrl.Dir, "elsewhere", "child", "io.max"), []byte(bad.String()+"\n"), 0o644))
	j, err := Join(ctrl, "elsewhere/child", bad.Device)
	want := bad
	want.ReadIOPS = 5
	if err != nil || j.Own != bad || j.Limit != want || j.From["riops"] != filepath.Join(ctrl.Dir, "elsewhere") || len(j.From) != 1 {
		t.Fatalf("join %+v %v: want the ancestor's stricter riops", j, err)
	}
	if err := j.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ctrl.Dir, "elsewhere")); err != nil {
		t.Error("Delete removed a joined group")
	}
	if _, err := Join(ctrl, "nowhere", bad.Device); err == nil {
		t.Error("joined a missing cgroup")
	}
	// A cgroup that enables controllers for its children takes no process.
	testenv.Must(t, os.WriteFile(filepath.Join(ctrl.Dir, "elsewhere", "cgroup.type"), []byte("domain\n"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(ctrl.Dir, "elsewhere", "cgroup.subtree_control"), []byte("io\n"), 0o644))
	if _, err := Join(ctrl, "elsewhere", bad.Device); !errors.Is(err, ErrInternalProcess) || !strings.Contains(err.Error(), "leaf") {
		t.Errorf("joined a non-leaf cgroup: %v", err)
	}
}

func TestDetectModes(t *testing.T) {
	mk := func(files ...string) string {
		root := t.TempDir()
		for _, f := range files {
			p := filepath.Join(root, f)
			testenv.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			content := ""
			if strings.HasSuffix(f, "cgroup.controllers") {
				content = "io memory"
			}
			testenv.Must(t, os.WriteFile(p, []byte(content), 0o644))
		}
		return root
	}
	cases := []struct {
		name    string
		root    string
		mode    Mode
		version int
		dir     string
		err     bool
	}{
		{"hybrid with blkio", mk("unified/cgroup.controllers", "blkio/blkio.throttle.read_iops_device"), Hybrid, 1, "blkio", false},
		{"hybrid, cgroup_no_v1=blkio", mk("unified/cgroup.controllers", "memory/x"), Hybrid, 2, "unified", false},
		{"legacy", mk("blkio/blkio.throttle.read_iops_device"), Legacy, 1, "blkio", false},
		{"unified", mk("cgroup.controllers"), Unified, 2, "", false},
		{"none", mk("nothing"), Unavailable, 0, "", true},
	}
	for _, c := range cases {
		got, err := Detect(sysfs.Default(), c.root)
		if (err != nil) != c.err || got.Mode != c.mode || got.Version != c.version || (!c.err && got.Dir != filepath.Join(c.root, c.dir)) {
			t.Errorf("%s: %+v %v", c.name, got, err)
		}
	}
}

// The host's real controller: v1 blkio here and in CI.
func realController(t *testing.T) Controller {
	t.Helper()
	testenv.Root(t)
	c, err := Detect(sysfs.Default(), DefaultRoot)
	testenv.Require(t, err == nil, "no cgroup I/O controller")
	return c
}

func TestRealCreateApplyDelete(t *testing.T) {
	ctrl := realController(t)
	dev, notice, err := ResolveDevice(sysfs.Default(), os.TempDir())
	testenv.Require(t, err == nil, "temp dir has no block device")
	if notice != "" {
		t.Log(notice)
	}
	l := Limit{Device: dev, ReadIOPS: 3000, WriteIOPS: 1000, WriteBPS: 64 << 20}
	g := createChecked(t, ctrl, l)
	// A real process in the group: dd with O_DIRECT, counted by the kernel.
	f := filepath.Join(t.TempDir(), "dd.dat")
	cmd := exec.Command("dd", "if=/dev/zero", "of="+f, "bs=4k", "count=200", "oflag=direct")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// dd may finish before it is moved; what counts is the mechanism.
	moveErr := g.AddProc(cmd.Process.Pid)
	_ = cmd.Wait() // the exit status is read from ProcessState
	if moveErr == nil {
		if c, err := g.Counters(); err != nil || c.WriteIOs > 200 {
			t.Errorf("counters %+v %v", c, err)
		}
	}
	shown, err := Show(ctrl, &dev)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range shown {
		found = found || (s.Cgroup == g.Name && s.Limit == l)
	}
	if !found {
		t.Errorf("show lacks %s: %+v", g.Name, shown)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path); !os.IsNotExist(err) {
		t.Fatalf("%s left behind", g.Path)
	}
}

func TestRealCleanupRemovesOrphans(t *testing.T) {
	ctrl := realController(t)
	// A group named for a pid that cannot exist, as a SIGKILLed run leaves.
	orphan := filepath.Join(ctrl.Dir, Parent, "999999999-1")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	mine, err := Create(ctrl, Limit{Device: sysfs.DevNum{Major: 254}, ReadIOPS: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { testenv.Must(t, mine.Delete()) }()
	removed, err := Cleanup(sysfs.Default(), ctrl)
	if err != nil {
		t.Fatal(err)
	}
	// Other test packages running at the same time may leave their own
	// orphans (a SIGKILLed run in cmd's tests): cleanup may take those too.
	if !slices.Contains(removed, orphan) || slices.Contains(removed, mine.Path) {
		t.Errorf("removed %v, want %s and not %s", removed, orphan, mine.Path)
	}
	if _, err := os.Stat(mine.Path); err != nil {
		t.Error("cleanup removed a live process's group")
	}
}

func TestResolveDeviceRefusesTmpfs(t *testing.T) {
	fi, err := os.Stat("/dev/shm")
	testenv.Need(t, err == nil && fi.IsDir(), "no /dev/shm")
	_, _, err = ResolveDevice(sysfs.Default(), "/dev/shm")
	if !errors.Is(err, ErrNoBlockDevice) || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("tmpfs: %v", err)
	}
}

// A partition, and a file on a filesystem on it, are capped through their
// whole disk, with a notice; the kernel takes a rule on that disk.
func TestRealPartitionResolvesToDisk(t *testing.T) {
	ctrl := realController(t)
	dir := t.TempDir()
	disk, part, _ := testenv.LoopPartition(t, dir, 64<<20, 2048, 40960)
	sys := sysfs.Default()
	var st unix.Stat_t
	if err := unix.Stat(disk, &st); err != nil {
		t.Fatal(err)
	}
	diskDev := sysfs.DevNumFromDev(st.Rdev)

	dev, notice, err := ResolveDevice(sys, part)
	if err != nil || dev != diskDev || !strings.Contains(notice, "partition") || !strings.Contains(notice, filepath.Base(disk)) {
		t.Fatalf("ResolveDevice(%s) = %s, %q, %v; want %s with a notice", part, dev, notice, err, diskDev)
	}
	file := filepath.Join(testenv.MountExt4(t, part), "f.dat")
	testenv.Must(t, os.WriteFile(file, []byte("x"), 0o644))
	if dev, notice, err := ResolveDevice(sys, file); err != nil || dev != diskDev || notice == "" {
		t.Errorf("ResolveDevice(file on %s) = %s, %q, %v; want %s with a notice", part, dev, notice, err, diskDev)
	}
	createChecked(t, ctrl, Limit{Device: dev, ReadIOPS: 500})
}

// createChecked creates a group under l, deleted when the test ends, and
// checks that the kernel holds exactly l.
func createChecked(t *testing.T, ctrl Controller, l Limit) *Group {
	t.Helper()
	g, err := Create(ctrl, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.Must(t, g.Delete()) })
	if got, err := g.Limits(); err != nil || got != l {
		t.Fatalf("kernel holds %+v (%v), planned %+v", got, err, l)
	}
	return g
}

// A stale cgroup that cannot be removed is named once: os.Remove's error
// already carries the path.
func TestCleanupErrorNamesPathOnce(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, Parent, "2147483646-1") // a pid above any pid_max
	if err := os.MkdirAll(filepath.Join(stale, "child"), 0o755); err != nil {
		t.Fatal(err) // a plain directory with a child is not empty: Remove fails
	}
	_, err := Cleanup(sysfs.Default(), Controller{Dir: root})
	if err == nil {
		t.Fatal("no error removing a non-empty directory")
	}
	if n := strings.Count(err.Error(), stale); n != 1 {
		t.Errorf("error %q names %s %d times, want once", err, stale, n)
	}
}

// A limit survives being recorded in a results document and read back,
// and its rendering parses back to it.
func TestLimitRecordRoundTrip(t *testing.T) {
	l := Limit{Device: sysfs.DevNum{Major: 254, Minor: 16}, ReadIOPS: 3000, WriteIOPS: 1000, ReadBPS: 64 << 20, WriteBPS: 1 << 20}
	c := l.Record(2, "/sys/fs/cgroup/iomatrix/1-1")
	if c.CgroupVersion != 2 || c.Cgroup != "/sys/fs/cgroup/iomatrix/1-1" || c.Device != "254:16" {
		t.Errorf("record %+v", c)
	}
	if got := LimitOf(c); got != l {
		t.Errorf("LimitOf(Record) = %+v, want %+v", got, l)
	}
	if got := LimitOf(nil); !got.Empty() {
		t.Errorf("LimitOf(nil) = %+v", got)
	}
}

func TestParseCapReadsTheRecordedSpec(t *testing.T) {
	// The form report.CapSpec writes.
	l, err := ParseCap("riops=3000,wbps=64MiB")
	if err != nil || l != (Limit{ReadIOPS: 3000, WriteBPS: 64 << 20}) {
		t.Errorf("ParseCap = %+v, %v", l, err)
	}
}

// A target that exists is found where it is; a file that does not exist
// yet, in its directory, where it will be laid out.
func TestTargetPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "there")
	testenv.Must(t, os.WriteFile(file, nil, 0o600))
	for path, want := range map[string]string{dir: dir, file: file, filepath.Join(dir, "new.dat"): dir} {
		if got := TargetPath(path); got != want {
			t.Errorf("TargetPath(%s) = %s, want %s", path, got, want)
		}
	}
}
