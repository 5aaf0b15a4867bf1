package sysfs_test

// The tests of this file read the machine's own /sys and /proc, and
// attach loop devices: an external test package, so that they can ask
// internal/testenv for what they need (testenv itself reads through this
// package).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

func TestSelfMaps(t *testing.T) {
	maps, err := sysfs.Default().SelfMaps()
	testenv.Need(t, err == nil, fmt.Sprint("no /proc here: ", err))
	exe, _ := os.Executable()
	for _, m := range maps {
		if m.FileBacked() && m.Path == exe && strings.Contains(m.Perms, "x") {
			return
		}
	}
	t.Errorf("no executable mapping of %s among %d mappings", exe, len(maps))
}

func TestRealTempDirDevice(t *testing.T) {
	dir := os.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatalf("stat %s: %v", dir, err)
	}
	dev := sysfs.DevNumFromDev(uint64(st.Dev))
	// Major 0 is the kernel's anonymous device range: tmpfs, overlay,
	// btrfs subvolumes and other filesystems without one block device.
	testenv.Need(t, dev.Major != 0, fmt.Sprintf("%s is on anonymous device %s, not a block device", dir, dev))
	fs := sysfs.Default()
	bd, err := fs.BlockDevice(dev)
	testenv.Need(t, !errors.Is(err, sysfs.ErrNoDevice), fmt.Sprintf("%s is on %s, which sysfs does not list: %v", dir, dev, err))
	if err != nil {
		t.Fatalf("BlockDevice(%s): %v", dev, err)
	}
	t.Logf("%s is on %+v", dir, bd)
	if bd.Dev != dev || bd.Name == "" || bd.DiskName == "" {
		t.Errorf("BlockDevice(%s) = %+v: wrong number or empty names", dev, bd)
	}
	if bd.LogicalBlockSize < 512 || bd.PhysicalBlockSize < bd.LogicalBlockSize {
		t.Errorf("block sizes %d/%d are implausible", bd.LogicalBlockSize, bd.PhysicalBlockSize)
	}
	if bd.SizeBytes <= 0 || bd.Scheduler == "" {
		t.Errorf("BlockDevice(%s) = %+v: missing size or scheduler", dev, bd)
	}
	if bd.Partition == (bd.Disk == bd.Dev) {
		t.Errorf("Partition=%v but Disk=%s, Dev=%s", bd.Partition, bd.Disk, bd.Dev)
	}

	if _, err := fs.DiskStats(dev); err != nil {
		t.Errorf("DiskStats(%s): %v", dev, err)
	}

	// The filesystem holding the temp dir is mounted, so the device must
	// not look free.
	reasons, err := fs.InUse(dev)
	if err != nil {
		t.Fatalf("InUse(%s): %v", dev, err)
	}
	mounted := false
	for _, r := range reasons {
		mounted = mounted || strings.HasPrefix(r, "mounted at ")
	}
	if !mounted {
		t.Errorf("InUse(%s) = %q, want a \"mounted at\" reason", dev, reasons)
	}
}

// writeMBR gives an image one primary partition so that the kernel creates
// a partition device when the image is attached with --partscan.
func writeMBR(t *testing.T, path string, startSector, sectors uint32) {
	t.Helper()
	mbr := make([]byte, 512)
	entry := mbr[446:462]
	entry[4] = 0x83 // Linux
	binary.LittleEndian.PutUint32(entry[8:], startSector)
	binary.LittleEndian.PutUint32(entry[12:], sectors)
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
}

// TestRealLoopStack stacks loop devices on loop devices, so that the real
// kernel's backing_file, partition directories and /dev nodes are
// exercised. It needs root and loop support and is skipped without them.
func TestRealLoopStack(t *testing.T) {
	testenv.Root(t)
	losetup := testenv.Command(t, "losetup")
	_, err := os.Stat("/dev/loop-control")
	testenv.Require(t, err == nil, fmt.Sprint("no loop support: ", err))

	const (
		imageSize  = 1 << 20
		partStart  = 64
		partLength = 1024 // sectors
	)
	newImage := func(t *testing.T) string {
		t.Helper()
		image := filepath.Join(t.TempDir(), "image")
		if err := os.WriteFile(image, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(image, imageSize); err != nil {
			t.Fatal(err)
		}
		return image
	}
	attach := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(losetup, append([]string{"--find", "--show"}, args...)...).CombinedOutput()
		testenv.Require(t, err == nil, fmt.Sprintf("losetup %v: %v: %s", args, err, out))
		node := strings.TrimSpace(string(out))
		t.Cleanup(func() {
			if out, err := exec.Command(losetup, "--detach", node).CombinedOutput(); err != nil {
				t.Errorf("losetup --detach %s: %v: %s", node, err, out)
			}
		})
		return node
	}
	fs := sysfs.Default()
	devOf := func(t *testing.T, node string) sysfs.DevNum {
		t.Helper()
		d, ok := fs.Resolve(node)
		if !ok {
			t.Fatalf("%s does not resolve to a block device", node)
		}
		return d
	}
	checkInUse := func(t *testing.T, dev sysfs.DevNum, want []string) {
		t.Helper()
		got, err := fs.InUse(dev)
		if err != nil {
			t.Errorf("InUse(%s): %v", dev, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("InUse(%s) = %q, want %q", dev, got, want)
		}
	}

	t.Run("whole disk", func(t *testing.T) {
		disk := attach(t, newImage(t))
		upper := attach(t, disk)
		diskDev, upperDev := devOf(t, disk), devOf(t, upper)

		bd, err := fs.BlockDevice(diskDev)
		if err != nil {
			t.Fatal(err)
		}
		want := sysfs.BlockDevice{
			Dev: diskDev, Name: filepath.Base(disk), Disk: diskDev, DiskName: filepath.Base(disk),
			LogicalBlockSize: bd.LogicalBlockSize, PhysicalBlockSize: bd.PhysicalBlockSize,
			Rotational: bd.Rotational, Scheduler: bd.Scheduler, SizeBytes: imageSize, MaxSectorsKB: bd.MaxSectorsKB, MaxSegments: bd.MaxSegments,
		}
		if bd != want || bd.LogicalBlockSize < 512 {
			t.Errorf("BlockDevice(%s) = %+v, want %+v", disk, bd, want)
		}
		if parts, err := fs.Partitions(diskDev); err != nil || len(parts) != 0 {
			t.Errorf("Partitions(%s) = %+v, %v; want none", disk, parts, err)
		}
		checkInUse(t, diskDev, []string{"backing " + filepath.Base(upper)})
		checkInUse(t, upperDev, []string{})
	})

	t.Run("partition", func(t *testing.T) {
		image := newImage(t)
		writeMBR(t, image, partStart, partLength)
		disk := attach(t, "--partscan", image)
		part := disk + "p1"
		if _, err := os.Stat(part); err != nil {
			// A kernel without MS-DOS partition-table support (as here)
			// ignores the MBR: add the same partition by hand (BLKPG).
			addpart := testenv.Command(t, "addpart")
			out, err := exec.Command(addpart, disk, "1", fmt.Sprint(partStart), fmt.Sprint(partLength)).CombinedOutput()
			testenv.Require(t, err == nil, fmt.Sprintf("addpart %s: %v: %s", disk, err, out))
			_, err = os.Stat(part)
			testenv.Require(t, err == nil, fmt.Sprintf("no %s after addpart: %v", part, err))
		}
		upper := attach(t, part)
		diskDev, partDev := devOf(t, disk), devOf(t, part)
		diskName, partName, upperName := filepath.Base(disk), filepath.Base(part), filepath.Base(upper)

		bd, err := fs.BlockDevice(diskDev)
		if err != nil {
			t.Fatal(err)
		}
		want := sysfs.BlockDevice{
			Dev: partDev, Name: partName, Partition: true, Disk: diskDev, DiskName: diskName,
			LogicalBlockSize: bd.LogicalBlockSize, PhysicalBlockSize: bd.PhysicalBlockSize,
			Rotational: bd.Rotational, Scheduler: bd.Scheduler, SizeBytes: partLength * 512, MaxSectorsKB: bd.MaxSectorsKB, MaxSegments: bd.MaxSegments,
		}
		parts, err := fs.Partitions(diskDev)
		if err != nil || len(parts) != 1 || parts[0] != want {
			t.Errorf("Partitions(%s) = %+v, %v; want [%+v]", disk, parts, err, want)
		}
		if got, err := fs.BlockDevice(partDev); err != nil || got != want {
			t.Errorf("BlockDevice(%s) = %+v, %v; want %+v", part, got, err, want)
		}
		checkInUse(t, diskDev, []string{"partition " + partName + " backing " + upperName})
		checkInUse(t, partDev, []string{"backing " + upperName})
	})
}

// The running kernel's schedstat, kthreadd's children and this process's
// threads, each read twice from the file kept open: reading from the
// start gives the file afresh, and a thread's wait only grows.
func TestRealSchedReader(t *testing.T) {
	_, err := os.Stat("/proc/self/schedstat")
	testenv.Need(t, err == nil, "no schedstat: a kernel without CONFIG_SCHED_INFO")
	r := sysfs.Default().SchedReader()
	defer r.Close()
	tid := unix.Gettid()
	_, first, err := r.Sched(0, tid)
	if err != nil {
		t.Fatal(err)
	}
	if _, again, err := r.Sched(0, tid); err != nil || again < first {
		t.Errorf("this thread's wait %v, then %v, %v", first, again, err)
	}
	for i := 0; i < 2; i++ {
		if tids, err := r.TaskIDs(0); err != nil || !slices.Contains(tids, tid) {
			t.Errorf("this process's threads, reading %d: %v, %v; want %d among them", i+1, tids, err, tid)
		}
		pids, err := r.KernelThreadIDs()
		if err != nil || len(pids) == 0 || pids[0] <= sysfs.Kthreadd {
			t.Fatalf("kernel threads, reading %d: %v, %v", i+1, pids, err)
		}
	}
}
