package sysfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BlockDevice describes a disk or partition as sysfs shows it. Queue
// attributes belong to the whole disk because partitions have no queue of
// their own; SizeBytes is the device's own size.
type BlockDevice struct {
	Dev       DevNum
	Name      string // kernel name as in /dev: "vda1", "loop0"
	Partition bool
	Disk      DevNum // whole disk; equals Dev when Partition is false
	DiskName  string // "vda"

	LogicalBlockSize  int
	PhysicalBlockSize int
	Rotational        bool
	Scheduler         string // active I/O scheduler, "none" when there is none
	SizeBytes         int64
	// MaxSectorsKB and MaxSegments bound one request: the block layer
	// splits a larger I/O. Zero when the kernel does not say.
	MaxSectorsKB int64
	MaxSegments  int64
}

// RequestsPerIO is how many requests the block layer makes of one I/O of
// bs bytes on this disk: a request holds at most MaxSectorsKB and
// MaxSegments pages (0: no such limit known). iomatrix's buffers are
// registered 4 KiB pages that are never merged into larger segments, so
// each page is one segment. The kernel throttles and counts requests: a
// 1 MiB I/O on a virtio disk with 254 segments counts twice against an
// IOPS cap and in /proc/diskstats.
func (b BlockDevice) RequestsPerIO(bs int64) int {
	k := int64(1)
	if kb := b.MaxSectorsKB; kb > 0 {
		k = max(k, (bs+kb*1024-1)/(kb*1024))
	}
	if segs := b.MaxSegments; segs > 0 {
		pages := (bs + 4095) / 4096
		k = max(k, (pages+segs-1)/segs)
	}
	return int(k)
}

// sectorSize is the fixed unit of the sysfs size attribute, independent of
// the device's logical block size.
const sectorSize = 512

// devDir returns the real /sys/devices/... directory of dev. The
// /sys/dev/block link is resolved because a partition's disk is only visible
// as the parent directory of the link's target.
func (fs FS) devDir(dev DevNum) (string, error) {
	byNum := filepath.Join(fs.sys, "dev", "block")
	link := filepath.Join(byNum, dev.String())
	dir, err := filepath.EvalSymlinks(link)
	if err == nil {
		return dir, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("resolve %s: %w", link, err)
	}
	// Only call the device missing when the directory that lists devices is
	// there; a missing or unmounted sysfs is a different problem.
	if _, statErr := os.Stat(byNum); statErr != nil {
		return "", fmt.Errorf("block device %s: %w", dev, statErr)
	}
	return "", fmt.Errorf("block device %s: %w", dev, ErrNoDevice)
}

// BlockDevice resolves /sys/dev/block/MAJ:MIN and reads the device's size
// and the queue attributes of its whole disk.
func (fs FS) BlockDevice(dev DevNum) (BlockDevice, error) {
	dir, err := fs.devDir(dev)
	if err != nil {
		return BlockDevice{}, err
	}
	return readBlockDevice(dir, dev)
}

// deviceDir is dev's sysfs directory, and whether dev is a partition.
func (fs FS) deviceDir(dev DevNum) (dir string, partition bool, err error) {
	if dir, err = fs.devDir(dev); err != nil {
		return "", false, err
	}
	if partition, err = isPartitionDir(dir); err != nil {
		return "", false, fmt.Errorf("block device %s: %w", dev, err)
	}
	return dir, partition, nil
}

func isPartitionDir(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "partition"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

func readBlockDevice(dir string, dev DevNum) (BlockDevice, error) {
	bd := BlockDevice{Dev: dev, Name: kernelName(filepath.Base(dir)), Disk: dev}
	part, err := isPartitionDir(dir)
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	diskDir := dir
	if part {
		bd.Partition = true
		diskDir = filepath.Dir(dir)
		if bd.Disk, err = readDevAttr(diskDir); err != nil {
			return BlockDevice{}, fmt.Errorf("block device %s: disk of partition: %w", dev, err)
		}
	}
	bd.DiskName = kernelName(filepath.Base(diskDir))

	sectors, err := readIntAttr(filepath.Join(dir, "size"))
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	bd.SizeBytes = sectors * sectorSize

	queue := filepath.Join(diskDir, "queue")
	logical, err := readIntAttr(filepath.Join(queue, "logical_block_size"))
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	physical, err := readIntAttr(filepath.Join(queue, "physical_block_size"))
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	rotational, err := readIntAttr(filepath.Join(queue, "rotational"))
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	bd.LogicalBlockSize = int(logical)
	bd.PhysicalBlockSize = int(physical)
	bd.Rotational = rotational != 0

	// Stacked devices without an elevator may lack the file entirely.
	sched, err := readAttr(filepath.Join(queue, "scheduler"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
	}
	bd.Scheduler = ParseScheduler(sched)
	for _, lim := range []struct {
		name string
		v    *int64
	}{{"max_sectors_kb", &bd.MaxSectorsKB}, {"max_segments", &bd.MaxSegments}} {
		v, err := readIntAttr(filepath.Join(queue, lim.name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return BlockDevice{}, fmt.Errorf("block device %s: %w", dev, err)
		}
		*lim.v = v
	}
	return bd, nil
}

// ParseScheduler returns the active entry of a queue/scheduler attribute,
// which the kernel marks with brackets ("none [mq-deadline] kyber"). Devices
// that cannot switch schedulers print a bare "none", hence the default.
func ParseScheduler(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return f[1 : len(f)-1]
		}
	}
	return "none"
}

// Partitions lists the partitions of a whole disk in partition-number order
// (so vda10 follows vda9). A disk without partitions yields an empty slice;
// a partition yields ErrNotWholeDisk.
func (fs FS) Partitions(disk DevNum) ([]BlockDevice, error) {
	dir, part, err := fs.deviceDir(disk)
	if err != nil {
		return nil, err
	}
	if part {
		return nil, fmt.Errorf("partitions of %s: %w", disk, ErrNotWholeDisk)
	}
	located, err := readPartitions(dir)
	if err != nil {
		return nil, err
	}
	parts := make([]BlockDevice, len(located))
	for i, l := range located {
		parts[i] = l.BlockDevice
	}
	return parts, nil
}

// locatedDevice keeps the sysfs directory next to the facts read from it,
// so that callers can read further attributes such as holders.
type locatedDevice struct {
	BlockDevice
	dir    string
	number int64 // partition number
}

func readPartitions(diskDir string) ([]locatedDevice, error) {
	entries, err := os.ReadDir(diskDir)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	var found []locatedDevice
	for _, e := range entries {
		// Partition directories are real directories; links such as bdi
		// and device are never partitions and are skipped here.
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(diskDir, e.Name())
		number, err := readIntAttr(filepath.Join(dir, "partition"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		dev, err := readDevAttr(dir)
		if err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		bd, err := readBlockDevice(dir, dev)
		if err != nil {
			return nil, err
		}
		found = append(found, locatedDevice{BlockDevice: bd, dir: dir, number: number})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].number < found[j].number })
	return found, nil
}

// QueueAttr reads the queue attribute name of the whole disk named disk
// ("vda"), such as io_poll; file is the attribute's path, for messages,
// whether or not it could be read.
func (fs FS) QueueAttr(disk, name string) (value, file string, err error) {
	file = fs.queueAttrFile(disk, name)
	value, err = readAttr(file)
	return value, file, err
}

// MultiQueue tells whether dev is a blk-mq device: its sysfs directory
// has an mq directory. dir is where that directory is looked for, for
// messages.
func (fs FS) MultiQueue(dev DevNum) (mq bool, dir string) {
	dir = filepath.Join(fs.sys, "dev", "block", dev.String(), "mq")
	_, err := os.Stat(dir)
	return err == nil, dir
}

// IsPartition tells whether the block device of kernel name name is a
// partition; false when there is no such device.
func (fs FS) IsPartition(name string) bool {
	_, err := os.Stat(filepath.Join(fs.sys, "class", "block", name, "partition"))
	return err == nil
}

// IsVirtual tells whether the block device of kernel name name has no
// hardware behind it (loop, zram, device-mapper, md: devices below
// /devices/virtual, which stack on other disks or on memory).
func (fs FS) IsVirtual(name string) (bool, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(fs.sys, "class", "block", name))
	if err != nil {
		return false, err
	}
	return strings.Contains(dir, "/devices/virtual/"), nil
}
