package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeTree is a sysfs and procfs fixture shaped like a VM with:
//
//	vda  254:0   vda1 254:1 mounted at /, held by dm-0
//	             vda2 254:2 backing loop0
//	             vda10 254:10 mounted at "/mnt/my data"
//	vdb  254:16  whole-disk swap
//	vdc  254:32  mounted twice at /mnt/x (bind), held by md0
//	vdd  254:48  free
//	loop0 7:0    backed by /dev/vda2, mounted at /mnt/loop
//	loop1 7:1    unbound
//	loop2 7:2    backed by a regular file
type fakeTree struct {
	root string
	fs   FS
}

func (ft fakeTree) write(t *testing.T, rel, content string) {
	t.Helper()
	path := filepath.Join(ft.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (ft fakeTree) mkdir(t *testing.T, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ft.root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (ft fakeTree) symlink(t *testing.T, target, rel string) {
	t.Helper()
	path := filepath.Join(ft.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// disk creates a whole disk below sys/devices/<parent>/block/<name>.
func (ft fakeTree) disk(t *testing.T, parent, name, dev, sectors, sched string) string {
	t.Helper()
	dir := filepath.Join("sys/devices", parent, "block", name)
	ft.write(t, dir+"/dev", dev+"\n")
	ft.write(t, dir+"/size", sectors+"\n")
	ft.write(t, dir+"/queue/logical_block_size", "512\n")
	ft.write(t, dir+"/queue/physical_block_size", "4096\n")
	ft.write(t, dir+"/queue/rotational", "0\n")
	ft.write(t, dir+"/queue/max_sectors_kb", "1280\n")
	ft.write(t, dir+"/queue/max_segments", "128\n")
	if sched != "" {
		ft.write(t, dir+"/queue/scheduler", sched+"\n")
	}
	ft.mkdir(t, dir+"/holders")
	// Directories and links that every real disk has and that are not
	// partitions.
	ft.mkdir(t, dir+"/power")
	ft.write(t, dir+"/mq/0/nr_tags", "256\n")
	ft.symlink(t, "../../..", dir+"/device")
	ft.symlink(t, "../../"+strings.TrimPrefix(dir, "sys/"), "sys/dev/block/"+dev)
	ft.symlink(t, "../"+strings.TrimPrefix(dir, "sys/"), "sys/block/"+name)
	ft.symlink(t, "../../"+strings.TrimPrefix(dir, "sys/"), "sys/class/block/"+name)
	return dir
}

func (ft fakeTree) partition(t *testing.T, diskDir, name, dev, number, sectors string) string {
	t.Helper()
	dir := filepath.Join(diskDir, name)
	ft.write(t, dir+"/dev", dev+"\n")
	ft.write(t, dir+"/partition", number+"\n")
	ft.write(t, dir+"/size", sectors+"\n")
	ft.mkdir(t, dir+"/holders")
	ft.symlink(t, "../../"+strings.TrimPrefix(dir, "sys/"), "sys/dev/block/"+dev)
	ft.symlink(t, "../../"+strings.TrimPrefix(dir, "sys/"), "sys/class/block/"+name)
	return dir
}

func newFakeTree(t *testing.T) fakeTree {
	t.Helper()
	root := t.TempDir()
	ft := fakeTree{root: root, fs: NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc"))}

	vda := ft.disk(t, "pci0000:00/virtio1", "vda", "254:0", "2097152", "none [mq-deadline] kyber bfq")
	ft.partition(t, vda, "vda1", "254:1", "1", "1024000")
	ft.partition(t, vda, "vda2", "254:2", "2", "4096")
	ft.partition(t, vda, "vda10", "254:10", "10", "2048")
	ft.symlink(t, "../../../../../../virtual/block/dm-0", vda+"/vda1/holders/dm-0")
	if target, _ := os.Readlink(filepath.Join(root, "sys/dev/block/254:0")); target != "../../devices/pci0000:00/virtio1/block/vda" {
		t.Fatalf("fixture link 254:0 -> %q", target)
	}

	ft.disk(t, "pci0000:00/virtio2", "vdb", "254:16", "2097152", "[none] mq-deadline")
	vdc := ft.disk(t, "pci0000:00/virtio3", "vdc", "254:32", "2097152", "[none] mq-deadline")
	ft.mkdir(t, vdc+"/holders/md0")
	ft.disk(t, "pci0000:00/virtio4", "vdd", "254:48", "2097152", "[none] mq-deadline")

	loop0 := ft.disk(t, "virtual", "loop0", "7:0", "4096", "")
	ft.write(t, loop0+"/queue/rotational", "1\n")
	ft.write(t, loop0+"/loop/backing_file", "/dev/vda2\n")
	ft.disk(t, "virtual", "loop1", "7:1", "0", "")
	loop2 := ft.disk(t, "virtual", "loop2", "7:2", "2048", "")
	ft.write(t, loop2+"/loop/backing_file", "/srv/images/disk 1.img\n")

	ft.write(t, "proc/self/mountinfo", strings.Join([]string{
		"22 27 0:21 / /proc rw,relatime - proc proc rw",
		"27 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw",
		`30 27 254:10 / /mnt/my\040data rw,relatime shared:2 - xfs /dev/vda10 rw`,
		"31 27 254:32 / /mnt/x rw - ext4 /dev/vdc rw",
		"32 27 254:32 / /mnt/x rw - ext4 /dev/vdc rw",
		"33 27 7:0 / /mnt/loop ro master:4 - squashfs /dev/loop0 ro",
		"",
	}, "\n"))
	ft.write(t, "proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"+
		"/dev/vdb                                partition\t1048572\t\t0\t\t-2\n"+
		"/swapfile                               file\t\t65532\t\t0\t\t-3\n")
	ft.write(t, "proc/diskstats", strings.Join([]string{
		" 254       0 vda 28455 5015 1260890 4711 2880 6452 517304 1534 0 3156 6564 3262 63 156368 287 519 30",
		" 254       1 vda1 900 1 800 7 600 5 400 3 2 100 200 0 0 0 0 0 0",
		"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
	}, "\n")+"\n")

	// /dev does not exist in the fixture, so name resolution is a table.
	// Regular files such as /swapfile resolve to nothing, as with stat.
	nodes := map[string]DevNum{
		"/dev/vda":   {254, 0},
		"/dev/vda1":  {254, 1},
		"/dev/vda2":  {254, 2},
		"/dev/vdb":   {254, 16},
		"/dev/loop0": {7, 0},
	}
	ft.fs.statRdev = func(path string) (DevNum, bool) {
		d, ok := nodes[path]
		return d, ok
	}
	return ft
}

func TestBlockDevice(t *testing.T) {
	ft := newFakeTree(t)
	tests := []struct {
		dev  DevNum
		want BlockDevice
	}{
		{DevNum{254, 0}, BlockDevice{
			Dev: DevNum{254, 0}, Name: "vda", Disk: DevNum{254, 0}, DiskName: "vda",
			LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "mq-deadline", SizeBytes: 2097152 * 512, MaxSectorsKB: 1280, MaxSegments: 128,
		}},
		{DevNum{254, 1}, BlockDevice{
			Dev: DevNum{254, 1}, Name: "vda1", Partition: true, Disk: DevNum{254, 0}, DiskName: "vda",
			LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "mq-deadline", SizeBytes: 1024000 * 512, MaxSectorsKB: 1280, MaxSegments: 128,
		}},
		{DevNum{254, 16}, BlockDevice{
			Dev: DevNum{254, 16}, Name: "vdb", Disk: DevNum{254, 16}, DiskName: "vdb",
			LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "none", SizeBytes: 2097152 * 512, MaxSectorsKB: 1280, MaxSegments: 128,
		}},
		{DevNum{7, 0}, BlockDevice{
			Dev: DevNum{7, 0}, Name: "loop0", Disk: DevNum{7, 0}, DiskName: "loop0",
			LogicalBlockSize: 512, PhysicalBlockSize: 4096, Rotational: true, Scheduler: "none", SizeBytes: 4096 * 512, MaxSectorsKB: 1280, MaxSegments: 128,
		}},
	}
	for _, tt := range tests {
		got, err := ft.fs.BlockDevice(tt.dev)
		if err != nil {
			t.Errorf("BlockDevice(%v): %v", tt.dev, err)
			continue
		}
		if got != tt.want {
			t.Errorf("BlockDevice(%v)\n got  %+v\n want %+v", tt.dev, got, tt.want)
		}
	}

	_, err := ft.fs.BlockDevice(DevNum{8, 0})
	if !errors.Is(err, ErrNoDevice) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing device: err = %v, want ErrNoDevice", err)
	}

	// Without sysfs at all the device is not "missing": the tree is.
	empty := NewFS(filepath.Join(t.TempDir(), "sys"), "/nonexistent")
	if _, err := empty.BlockDevice(DevNum{254, 0}); err == nil || errors.Is(err, ErrNoDevice) {
		t.Errorf("no sysfs: err = %v, want an error other than ErrNoDevice", err)
	}

	// Every gendisk has a queue; its absence means a broken tree, not a default.
	if err := os.Remove(filepath.Join(ft.root, "sys/devices/pci0000:00/virtio4/block/vdd/queue/logical_block_size")); err != nil {
		t.Fatal(err)
	}
	if _, err := ft.fs.BlockDevice(DevNum{254, 48}); err == nil || !strings.Contains(err.Error(), "logical_block_size") {
		t.Errorf("missing queue attribute: err = %v", err)
	}
}

func TestPartitions(t *testing.T) {
	ft := newFakeTree(t)
	parts, err := ft.fs.Partitions(DevNum{254, 0})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.Name+"="+p.Dev.String())
		if !p.Partition || p.Disk != (DevNum{254, 0}) || p.DiskName != "vda" || p.LogicalBlockSize != 512 {
			t.Errorf("partition %+v lacks its disk's facts", p)
		}
	}
	// Numeric order, not the lexical order that would put vda10 second.
	if want := []string{"vda1=254:1", "vda2=254:2", "vda10=254:10"}; !reflect.DeepEqual(names, want) {
		t.Errorf("partitions = %v, want %v", names, want)
	}

	if parts, err := ft.fs.Partitions(DevNum{254, 16}); err != nil || len(parts) != 0 {
		t.Errorf("unpartitioned disk: %v, %v", parts, err)
	}
	if _, err := ft.fs.Partitions(DevNum{254, 1}); !errors.Is(err, ErrNotWholeDisk) {
		t.Errorf("partition of a partition: err = %v, want ErrNotWholeDisk", err)
	}
	if _, err := ft.fs.Partitions(DevNum{254, 99}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("missing disk: err = %v, want ErrNoDevice", err)
	}
}

func TestFSDiskStats(t *testing.T) {
	ft := newFakeTree(t)
	got, err := ft.fs.DiskStats(DevNum{254, 1})
	if err != nil {
		t.Fatal(err)
	}
	want := DiskStats{
		ReadIOs: 900, ReadMerges: 1, ReadSectors: 800, ReadTicksMs: 7,
		WriteIOs: 600, WriteMerges: 5, WriteSectors: 400, WriteTicksMs: 3,
		InFlight: 2, IOTicksMs: 100, TimeInQueueMs: 200,
	}
	if got != want {
		t.Errorf("DiskStats(254:1) = %+v, want %+v", got, want)
	}
	if _, err := ft.fs.DiskStats(DevNum{254, 16}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("device absent from diskstats: err = %v, want ErrNoDevice", err)
	}

	ft.write(t, "proc/diskstats", "254 0 vda 1 2 3\n")
	if _, err := ft.fs.DiskStats(DevNum{254, 0}); err == nil || !strings.Contains(err.Error(), "diskstats line 1") {
		t.Errorf("malformed diskstats: err = %v", err)
	}
}

func TestFSMounts(t *testing.T) {
	ft := newFakeTree(t)
	mounts, err := ft.fs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 6 {
		t.Fatalf("got %d mounts, want 6", len(mounts))
	}
	want := Mount{Dev: DevNum{254, 10}, Root: "/", MountPoint: "/mnt/my data", FSType: "xfs", Source: "/dev/vda10"}
	if mounts[2] != want {
		t.Errorf("mounts[2] = %+v, want %+v", mounts[2], want)
	}
}

func TestInUse(t *testing.T) {
	ft := newFakeTree(t)
	tests := []struct {
		dev  DevNum
		want []string
	}{
		{DevNum{254, 0}, []string{
			"partition vda1 mounted at /",
			"partition vda1 held by dm-0",
			"partition vda2 backing loop0",
			"partition vda10 mounted at /mnt/my data",
		}},
		{DevNum{254, 1}, []string{"mounted at /", "held by dm-0"}},
		{DevNum{254, 2}, []string{"backing loop0"}},
		{DevNum{254, 16}, []string{"active swap"}},
		{DevNum{254, 32}, []string{"mounted at /mnt/x", "held by md0"}},
		{DevNum{254, 48}, []string{}},
		{DevNum{7, 0}, []string{"mounted at /mnt/loop"}},
		{DevNum{7, 2}, []string{}},
	}
	for _, tt := range tests {
		got, err := ft.fs.InUse(tt.dev)
		if err != nil {
			t.Errorf("InUse(%v): %v", tt.dev, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("InUse(%v) = %q, want %q", tt.dev, got, tt.want)
		}
	}

	if _, err := ft.fs.InUse(DevNum{8, 0}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("missing device: err = %v, want ErrNoDevice", err)
	}
}

func TestInUseUnreadableSources(t *testing.T) {
	t.Run("no swap support", func(t *testing.T) {
		ft := newFakeTree(t)
		if err := os.Remove(filepath.Join(ft.root, "proc/swaps")); err != nil {
			t.Fatal(err)
		}
		got, err := ft.fs.InUse(DevNum{254, 2})
		if err != nil || !reflect.DeepEqual(got, []string{"backing loop0"}) {
			t.Errorf("InUse = %q, %v; want [backing loop0]", got, err)
		}
	})
	// A device must never look free because a source could not be read.
	for _, rel := range []string{
		"proc/self/mountinfo",
		"sys/devices/pci0000:00/virtio4/block/vdd/holders",
	} {
		t.Run("missing "+rel, func(t *testing.T) {
			ft := newFakeTree(t)
			if err := os.RemoveAll(filepath.Join(ft.root, rel)); err != nil {
				t.Fatal(err)
			}
			if got, err := ft.fs.InUse(DevNum{254, 48}); err == nil {
				t.Errorf("InUse = %q, want an error", got)
			}
		})
	}
	t.Run("malformed swaps", func(t *testing.T) {
		ft := newFakeTree(t)
		ft.write(t, "proc/swaps", "Filename Type\n/dev/vdb\n")
		if got, err := ft.fs.InUse(DevNum{254, 48}); err == nil || !strings.Contains(err.Error(), "swaps line 2") {
			t.Errorf("InUse = %q, %v; want a swaps parse error", got, err)
		}
	})
}

// A file that cannot be read is named once: the *os.PathError of the read
// already carries the path, so wrapping it with the path again would say it
// twice.
func TestUnreadableFileNamedOnce(t *testing.T) {
	root := t.TempDir()
	fs := NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc"))
	backing := filepath.Join(root, "sys", "block", "loop0", "loop", "backing_file")
	if err := os.MkdirAll(backing, 0o755); err != nil { // a directory: reading it fails
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		call       func() error
	}{
		{"diskstats", filepath.Join(root, "proc", "diskstats"), func() error { _, err := fs.DiskStats(DevNum{254, 0}); return err }},
		{"mountinfo", filepath.Join(root, "proc", "self", "mountinfo"), func() error { _, err := fs.Mounts(); return err }},
		{"maps", filepath.Join(root, "proc", "self", "maps"), func() error { _, err := fs.SelfMaps(); return err }},
		{"loop backing", backing, func() error { _, err := fs.loopBackings(); return err }},
	}
	for _, c := range cases {
		err := c.call()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if n := strings.Count(err.Error(), c.path); n != 1 {
			t.Errorf("%s: error %q names %s %d times, want once", c.name, err, c.path, n)
		}
	}
}

// A queue attribute is read from the whole disk's queue, and its file is
// named whether or not it could be read.
func TestQueueAttr(t *testing.T) {
	ft := newFakeTree(t)
	ft.write(t, "sys/devices/pci0000:00/virtio1/block/vda/queue/io_poll", "0\n")
	v, file, err := ft.fs.QueueAttr("vda", "io_poll")
	if want := filepath.Join(ft.root, "sys/block/vda/queue/io_poll"); err != nil || v != "0" || file != want {
		t.Errorf("vda io_poll: %q at %s, %v; want \"0\" at %s", v, file, err, want)
	}
	v, file, err = ft.fs.QueueAttr("vdb", "io_poll")
	if want := filepath.Join(ft.root, "sys/block/vdb/queue/io_poll"); !errors.Is(err, os.ErrNotExist) || v != "" || file != want || !strings.Contains(err.Error(), want) {
		t.Errorf("vdb without io_poll: %q at %s, %v; want ErrNotExist naming %s", v, file, err, want)
	}
}

// A blk-mq device has an mq directory; a partition has none of its own.
func TestMultiQueue(t *testing.T) {
	ft := newFakeTree(t)
	if mq, dir := ft.fs.MultiQueue(DevNum{254, 0}); !mq || dir != filepath.Join(ft.root, "sys/dev/block/254:0/mq") {
		t.Errorf("vda: mq %v at %s", mq, dir)
	}
	if mq, dir := ft.fs.MultiQueue(DevNum{254, 1}); mq || dir != filepath.Join(ft.root, "sys/dev/block/254:1/mq") {
		t.Errorf("vda1: mq %v at %s", mq, dir)
	}
	if mq, _ := ft.fs.MultiQueue(DevNum{9, 9}); mq {
		t.Error("a device that does not exist is blk-mq")
	}
}

// Devices by name: partitions, and virtual devices (below
// /devices/virtual) told from disks with hardware behind them.
func TestPartitionAndVirtual(t *testing.T) {
	ft := newFakeTree(t)
	for _, c := range []struct {
		name          string
		part, virtual bool
	}{{"vda", false, false}, {"vda1", true, false}, {"vdd", false, false}, {"loop0", false, true}, {"loop2", false, true}} {
		if p := ft.fs.IsPartition(c.name); p != c.part {
			t.Errorf("%s: partition %v, want %v", c.name, p, c.part)
		}
		if v, err := ft.fs.IsVirtual(c.name); err != nil || v != c.virtual {
			t.Errorf("%s: virtual %v, %v; want %v", c.name, v, err, c.virtual)
		}
	}
	if ft.fs.IsPartition("nope") {
		t.Error("a device that does not exist is a partition")
	}
	if _, err := ft.fs.IsVirtual("nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a device that does not exist: %v", err)
	}
}

// A process's threads by name, and a thread's CPU time: schedstat's
// where there is one, else stat's.
func TestTasks(t *testing.T) {
	ft := newFakeTree(t)
	ft.write(t, "proc/self/task/100/comm", "iomatrix\n")
	ft.write(t, "proc/self/task/100/stat", "100 (iomatrix) S 1 100 100 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 100 0 0\n")
	ft.write(t, "proc/self/task/101/comm", "iou-sqp-100\n")
	ft.write(t, "proc/self/task/101/schedstat", "2500000000 1000 7\n")
	ft.write(t, "proc/self/task/101/stat", "101 (iou-sqp-100) S 1 100 100 0 -1 4194304 0 0 0 0 1 1 0 0 20 0 4 0 100 0 0\n")
	ft.mkdir(t, "proc/self/task/102") // ended while listed: no comm
	tasks, err := ft.fs.Tasks(0)
	if want := []Task{{100, "iomatrix"}, {101, "iou-sqp-100"}}; err != nil || !reflect.DeepEqual(tasks, want) {
		t.Errorf("Tasks(0) = %v, %v; want %v", tasks, err, want)
	}
	if d, err := ft.fs.TaskCPU(0, 101); err != nil || d != 2500*time.Millisecond {
		t.Errorf("TaskCPU with schedstat: %v, %v", d, err)
	}
	if d, err := ft.fs.TaskCPU(0, 100); err != nil || d != 420*time.Millisecond {
		t.Errorf("TaskCPU from stat: %v, %v; want 42 ticks", d, err)
	}
	if _, err := ft.fs.TaskCPU(0, 102); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TaskCPU of a thread that ended: %v", err)
	}
	if _, err := ft.fs.Tasks(4242); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Tasks of no process: %v", err)
	}
}
