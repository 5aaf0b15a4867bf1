package sysfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// InUse explains why a block device must not be written. Each reason is a
// short sentence such as "mounted at /mnt/x", "held by dm-0", "backing
// loop0" or "active swap"; reasons found on a partition of dev are prefixed
// with "partition NAME ". An empty result means nothing on this system is
// known to use the device.
//
// Any source that cannot be read is an error rather than silence, because a
// false "free" answer leads to overwriting live data. The exception is a
// missing /proc/swaps, which only happens on kernels built without swap.
func (fs FS) InUse(dev DevNum) ([]string, error) {
	targets, err := fs.withPartitions(dev)
	if err != nil {
		return nil, err
	}
	users, err := fs.readDeviceUsers()
	if err != nil {
		return nil, err
	}
	reasons := []string{}
	seen := make(map[string]bool)
	for _, t := range targets {
		uses, err := users.uses(t)
		if err != nil {
			return nil, fmt.Errorf("block device %s: %w", t.dev, err)
		}
		for _, use := range uses {
			// Bind mounts of one filesystem repeat the same mount point.
			if r := t.prefix + use; !seen[r] {
				seen[r] = true
				reasons = append(reasons, r)
			}
		}
	}
	return reasons, nil
}

// inUseTarget is a device whose users InUse reports, with the words that
// start each of its reasons.
type inUseTarget struct {
	dev    DevNum
	dir    string
	prefix string
}

// withPartitions is dev and, when dev is a whole disk, each of its
// partitions: writing the disk overwrites them too.
func (fs FS) withPartitions(dev DevNum) ([]inUseTarget, error) {
	dir, isPart, err := fs.deviceDir(dev)
	if err != nil {
		return nil, err
	}
	targets := []inUseTarget{{dev: dev, dir: dir}}
	if isPart {
		return targets, nil
	}
	parts, err := readPartitions(dir)
	if err != nil {
		return nil, fmt.Errorf("block device %s: %w", dev, err)
	}
	for _, p := range parts {
		targets = append(targets, inUseTarget{dev: p.Dev, dir: p.dir, prefix: "partition " + p.Name + " "})
	}
	return targets, nil
}

// deviceUsers are the users of block devices that are listed system-wide.
// Holders are not among them: each device lists its own.
type deviceUsers struct {
	mounts []Mount
	swaps  []DevNum
	loops  []loopBacking
}

func (fs FS) readDeviceUsers() (deviceUsers, error) {
	var u deviceUsers
	var err error
	if u.mounts, err = fs.Mounts(); err != nil {
		return deviceUsers{}, err
	}
	if u.swaps, err = fs.swapDevices(); err != nil {
		return deviceUsers{}, err
	}
	if u.loops, err = fs.loopBackings(); err != nil {
		return deviceUsers{}, err
	}
	return u, nil
}

// uses says how the target is used, each kind of user in turn: mounts,
// holders, swap, loop devices.
func (u deviceUsers) uses(t inUseTarget) ([]string, error) {
	var uses []string
	for _, m := range u.mounts {
		if m.Dev == t.dev {
			uses = append(uses, "mounted at "+m.MountPoint)
		}
	}
	holders, err := readHolders(t.dir)
	if err != nil {
		return nil, err
	}
	for _, h := range holders {
		uses = append(uses, "held by "+h)
	}
	for _, s := range u.swaps {
		if s == t.dev {
			uses = append(uses, "active swap")
		}
	}
	for _, l := range u.loops {
		if l.backing == t.dev {
			uses = append(uses, "backing "+l.name)
		}
	}
	return uses, nil
}

// readHolders lists the devices stacked on top of a device (device-mapper,
// md, bcache), which keep it open without any mount showing it.
func readHolders(devDir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(devDir, "holders"))
	if err != nil {
		return nil, fmt.Errorf("list holders: %w", err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = kernelName(e.Name())
	}
	return names, nil
}

// SwapEntry is one active swap area from /proc/swaps.
type SwapEntry struct {
	Filename string // device node or swap file, escapes decoded
	Type     string // "partition" or "file"
}

// ParseSwaps parses /proc/swaps: a header line, then one line per active
// swap area whose first column is the path given to swapon.
func ParseSwaps(r io.Reader) ([]SwapEntry, error) {
	var swaps []SwapEntry
	sc := newLineScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if lineNo == 1 && len(fields) > 0 && fields[0] == "Filename" {
			continue
		}
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("parse swaps line %d: %d fields, want at least 2", lineNo, len(fields))
		}
		swaps = append(swaps, SwapEntry{Filename: unescapeOctal(fields[0]), Type: fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read swaps: %w", err)
	}
	return swaps, nil
}

// swapDevices returns the device numbers of active swap areas that are
// block devices. Swap files are left out: the filesystem holding them is
// mounted, which InUse already reports.
func (fs FS) swapDevices() ([]DevNum, error) {
	swaps, err := parseFile(filepath.Join(fs.proc, "swaps"), ParseSwaps)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var devs []DevNum
	for _, s := range swaps {
		if d, ok := fs.resolve(s.Filename); ok {
			devs = append(devs, d)
		}
	}
	return devs, nil
}

type loopBacking struct {
	name    string
	backing DevNum
}

// loopBackings returns the loop devices whose backing file is itself a
// block device. The loop/ directory exists only while a loop device is
// bound, so unbound loop devices are skipped by the glob.
func (fs FS) loopBackings() ([]loopBacking, error) {
	pattern := filepath.Join(fs.sys, "block", "loop*", "loop", "backing_file")
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("list loop devices: %w", err)
	}
	var loops []loopBacking
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // detached between the glob and the read
		}
		if err != nil {
			return nil, err // an *os.PathError: it names the path
		}
		// The path is printed raw, so only the final newline is not part of it.
		backing := strings.TrimSuffix(string(raw), "\n")
		if d, ok := fs.resolve(backing); ok {
			loops = append(loops, loopBacking{
				name:    kernelName(filepath.Base(filepath.Dir(filepath.Dir(p)))),
				backing: d,
			})
		}
	}
	return loops, nil
}
