package target

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// The ioctl number is the kernel's (include/uapi/linux/nvme_ioctl.h);
// iotest's TestNVMeIoctlNumbers has NVME_URING_CMD_IO.
func TestNVMeIoctlNumbers(t *testing.T) {
	if nvmeIoctlID != 0x4E40 {
		t.Errorf("NVME_IOCTL_ID %#x", nvmeIoctlID)
	}
}

// A namespace's blocks are a power of two bytes: the engine shifts by
// their log2.
func TestNewNamespace(t *testing.T) {
	if ns, err := newNamespace(3, 512, 1<<20); err != nil || *ns != (Namespace{ID: 3, LBAShift: 9, MaxBytes: 1 << 20}) {
		t.Errorf("512-byte blocks: %+v, %v", ns, err)
	}
	for _, lbs := range []int{0, -4096, 4095} {
		if ns, err := newNamespace(3, lbs, 0); err == nil {
			t.Errorf("%d-byte blocks: %+v", lbs, ns)
		}
	}
}

// fakeNVMe is a sysfs and procfs tree with one NVMe namespace of 1 GiB
// in 4 KiB blocks: the block device nvme0n1 (259:0), and as its generic
// device the character device number of /dev/null (1:3), so that a test
// plans /dev/null as if it were /dev/ng0n1 without a device of its own.
func fakeNVMe(t *testing.T, nsid bool) (sysfs.FS, string) {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := "sys/devices/pci0000:00/nvme/nvme0"
	disk := ctrl + "/nvme0n1"
	for name, v := range map[string]string{"dev": "259:0", "size": "2097152", "queue/logical_block_size": "4096", "queue/physical_block_size": "4096",
		"queue/rotational": "0", "queue/max_sectors_kb": "128", "queue/max_hw_sectors_kb": "128", "queue/max_segments": "16", "queue/scheduler": "[none]"} {
		write(disk+"/"+name, v)
	}
	if nsid {
		write(disk+"/nsid", "2")
	}
	if err := os.MkdirAll(filepath.Join(root, disk, "holders"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../devices/pci0000:00/nvme/nvme0/nvme0n1", "sys/block/nvme0n1")
	link("../../devices/pci0000:00/nvme/nvme0/nvme0n1", "sys/dev/block/259:0")
	write(ctrl+"/ng0n1/dev", "1:3")
	if err := os.MkdirAll(filepath.Join(root, "sys/class/nvme-generic"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../../../../../class/nvme-generic", ctrl+"/ng0n1/subsystem")
	link("../../devices/pci0000:00/nvme/nvme0/ng0n1", "sys/dev/char/1:3")
	write("proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw")
	write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority")
	return sysfs.NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc")), root
}

// A generic NVMe device is planned from its namespace's block device:
// size, block size, namespace id; its disk's counters are said not to
// count it; writes need AllowDestructive and a namespace nothing uses.
func TestPlanPassthrough(t *testing.T) {
	fs, root := fakeNVMe(t, true)
	p, err := NewPlan("/dev/null", Options{Sys: fs})
	if err != nil {
		t.Fatal(err)
	}
	want := results.TargetInfo{Path: "/dev/null", Kind: KindPassthrough, Device: "259:0", Disk: "nvme0n1", SizeBytes: 1 << 30, LogicalBlockSize: 4096, NSID: 2}
	if p.Info != want || p.Size != 1<<30 || p.Align != 4096 || p.Action != ActionDevice {
		t.Errorf("plan %+v\nwant info %+v", p, want)
	}
	if ns := p.Namespace(); ns == nil || *ns != (Namespace{ID: 2, LBAShift: 12, MaxBytes: 16 * 4096}) || p.hasDev || !strings.Contains(p.devNote, "not counted") {
		t.Errorf("namespace %+v, hasDev %v, note %q", ns, p.hasDev, p.devNote)
	}

	// Writes.
	if _, err := NewPlan("/dev/null", Options{Sys: fs, Writes: true}); !errors.Is(err, ErrDestructive) {
		t.Errorf("writes without AllowDestructive: %v", err)
	}
	if p, err := NewPlan("/dev/null", Options{Sys: fs, Writes: true, AllowDestructive: true, Size: 1 << 20}); err != nil || p.Size != 1<<20 {
		t.Errorf("writes, 1 MiB: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/self/mountinfo"), []byte("40 1 259:0 / /mnt rw - ext4 /dev/nvme0n1 rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan("/dev/null", Options{Sys: fs, Writes: true, AllowDestructive: true}); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "nvme0n1: mounted at /mnt") {
		t.Errorf("writes to a mounted namespace: %v", err)
	}

	// Without a namespace id in sysfs, the driver is asked: /dev/null
	// has no answer, and says so.
	fs, _ = fakeNVMe(t, false)
	if _, err := NewPlan("/dev/null", Options{Sys: fs}); err == nil || !strings.Contains(err.Error(), "NVME_IOCTL_ID") {
		t.Errorf("no nsid attribute: %v", err)
	}
}

// A character device of another kind is no target.
func TestPlanOtherCharDevice(t *testing.T) {
	fs, _ := fakeNVMe(t, true)
	if _, err := NewPlan("/dev/zero", Options{Sys: fs}); !errors.Is(err, ErrNotTarget) || !strings.Contains(err.Error(), "not an NVMe generic device") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// A polled ring needs the target's disk to poll: its queue/io_poll is 1.
// The refusal names the poll field, the file and what it holds.
func TestCheckPoll(t *testing.T) {
	fs, root := fakeNVMe(t, true)
	p, err := NewPlan("/dev/null", Options{Sys: fs})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "sys/block/nvme0n1/queue/io_poll")
	if err := p.CheckPoll(); !pattern.IsField(err, "poll") || !strings.Contains(err.Error(), "/dev/null: cannot read "+file+" (open "+file+": no such file or directory)") {
		t.Errorf("no io_poll: %v", err)
	}
	if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckPoll(); !pattern.IsField(err, "poll") || !strings.Contains(err.Error(), "/dev/null's disk nvme0n1 cannot poll for completions ("+file+" is 0)") {
		t.Errorf("io_poll 0: %v", err)
	}
	if err := os.WriteFile(file, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckPoll(); err != nil {
		t.Errorf("io_poll 1: %v", err)
	}
	p.Info.Disk = ""
	if err := p.CheckPoll(); !pattern.IsField(err, "poll") || !strings.Contains(err.Error(), "is on no block device that could poll") {
		t.Errorf("no disk: %v", err)
	}
}
