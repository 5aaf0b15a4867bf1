package sysfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotNVMeGeneric reports that a character device is not an NVMe
// namespace's generic device.
var ErrNotNVMeGeneric = errors.New("not an NVMe generic device (ngXnY)")

// NVMeGeneric is an NVMe namespace's generic character device (ngXnY, of
// the nvme-generic class), through which commands reach the drive
// without the block layer, and the block device of the same namespace
// (nvmeXnY), whose attributes describe the namespace.
type NVMeGeneric struct {
	Name string // "ng0n1"
	Dev  DevNum // the character device's number
	Disk BlockDevice
	// NSID is the namespace's id as the block device's nsid attribute
	// gives it; 0 where the kernel has no such attribute.
	NSID uint32
	// MaxHWSectorsKB and the disk's MaxSegments bound one command's data:
	// the kernel never splits a passthrough command, it refuses one that
	// is too large.
	MaxHWSectorsKB int64
	// PassthroughStats is set when the kernel counts passthrough
	// commands in the disk's /proc/diskstats (queue/iostats_passthrough
	// is 1); StatsAttr is that attribute's value, "" where it is absent
	// (kernels before it never count them).
	PassthroughStats bool
	StatsAttr        string
}

// NVMeGeneric reads the generic NVMe device whose character device
// number is dev, and its namespace's block device. A character device of
// another class is ErrNotNVMeGeneric.
func (fs FS) NVMeGeneric(dev DevNum) (NVMeGeneric, error) {
	link := filepath.Join(fs.sys, "dev", "char", dev.String())
	dir, err := filepath.EvalSymlinks(link)
	if errors.Is(err, os.ErrNotExist) {
		return NVMeGeneric{}, fmt.Errorf("character device %s: %w", dev, ErrNotNVMeGeneric)
	}
	if err != nil {
		return NVMeGeneric{}, fmt.Errorf("resolve %s: %w", link, err)
	}
	class, err := filepath.EvalSymlinks(filepath.Join(dir, "subsystem"))
	name := filepath.Base(dir)
	rest, ng := strings.CutPrefix(name, "ng")
	if err != nil || filepath.Base(class) != "nvme-generic" || !ng {
		return NVMeGeneric{}, fmt.Errorf("character device %s (%s): %w", dev, name, ErrNotNVMeGeneric)
	}
	g := NVMeGeneric{Name: name, Dev: dev}
	// The driver names both devices of a namespace alike: ngXnY and
	// nvmeXnY, with the same controller (or subsystem) and namespace
	// instances.
	diskName := "nvme" + rest
	diskDir := filepath.Join(fs.sys, "block", diskName)
	diskDev, err := readDevAttr(diskDir)
	if err != nil {
		return NVMeGeneric{}, fmt.Errorf("%s: its block device %s: %w", name, diskName, err)
	}
	if g.Disk, err = fs.BlockDevice(diskDev); err != nil {
		return NVMeGeneric{}, fmt.Errorf("%s: %w", name, err)
	}
	nsid, err := readIntAttr(filepath.Join(diskDir, "nsid"))
	switch {
	case err == nil && nsid > 0 && nsid < 1<<32:
		g.NSID = uint32(nsid)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return NVMeGeneric{}, fmt.Errorf("%s: %w", name, err)
	}
	queue := filepath.Join(diskDir, "queue")
	if g.MaxHWSectorsKB, err = readIntAttr(filepath.Join(queue, "max_hw_sectors_kb")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return NVMeGeneric{}, fmt.Errorf("%s: %w", name, err)
	}
	g.StatsAttr, err = readAttr(filepath.Join(queue, "iostats_passthrough"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return NVMeGeneric{}, fmt.Errorf("%s: %w", name, err)
	}
	g.PassthroughStats = g.StatsAttr == "1"
	return g, nil
}
