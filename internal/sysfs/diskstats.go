package sysfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DiskStats is one line of /proc/diskstats: the counters that follow the
// device name, as described in the kernel's
// Documentation/admin-guide/iostats.rst. Sector counts are in 512-byte
// units whatever the device's block size.
type DiskStats struct {
	ReadIOs, ReadMerges, ReadSectors, ReadTicksMs     uint64
	WriteIOs, WriteMerges, WriteSectors, WriteTicksMs uint64
	InFlight, IOTicksMs, TimeInQueueMs                uint64
	// The discard (kernel 4.18+) and flush (5.5+) counters stay 0 when
	// the running kernel's lines are too short to carry them.
	DiscardIOs, DiscardMerges, DiscardSectors, DiscardTicksMs uint64
	FlushIOs, FlushTicksMs                                    uint64
}

// Line lengths, counting major, minor and name, of the layouts the kernel has
// used: 4.18 appended four discard counters, 5.5 two flush counters.
const (
	diskstatsBaseFields    = 14
	diskstatsDiscardFields = 18
	diskstatsFlushFields   = 20
)

// ParseDiskstats parses the content of /proc/diskstats. Lines longer than the
// newest known layout are accepted and their extra counters ignored, so that
// a future kernel appending counters does not break readers.
func ParseDiskstats(r io.Reader) (map[DevNum]DiskStats, error) {
	stats := make(map[DevNum]DiskStats)
	sc := newLineScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		dev, st, err := parseDiskstatsFields(fields)
		if err != nil {
			return nil, fmt.Errorf("parse diskstats line %d: %w", lineNo, err)
		}
		stats[dev] = st
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read diskstats: %w", err)
	}
	return stats, nil
}

func parseDiskstatsFields(fields []string) (DevNum, DiskStats, error) {
	n := len(fields)
	switch {
	case n == diskstatsBaseFields, n == diskstatsDiscardFields, n >= diskstatsFlushFields:
	default:
		return DevNum{}, DiskStats{}, fmt.Errorf("%d fields, want %d, %d or at least %d",
			n, diskstatsBaseFields, diskstatsDiscardFields, diskstatsFlushFields)
	}
	dev, err := ParseDevNum(fields[0] + ":" + fields[1])
	if err != nil {
		return DevNum{}, DiskStats{}, err
	}
	counters := make([]uint64, n-3)
	for i, f := range fields[3:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return DevNum{}, DiskStats{}, fmt.Errorf("%s field %d: %w", fields[2], i+4, err)
		}
		counters[i] = v
	}
	st := DiskStats{
		ReadIOs: counters[0], ReadMerges: counters[1], ReadSectors: counters[2], ReadTicksMs: counters[3],
		WriteIOs: counters[4], WriteMerges: counters[5], WriteSectors: counters[6], WriteTicksMs: counters[7],
		InFlight: counters[8], IOTicksMs: counters[9], TimeInQueueMs: counters[10],
	}
	if n >= diskstatsDiscardFields {
		st.DiscardIOs, st.DiscardMerges, st.DiscardSectors, st.DiscardTicksMs = counters[11], counters[12], counters[13], counters[14]
	}
	if n >= diskstatsFlushFields {
		st.FlushIOs, st.FlushTicksMs = counters[15], counters[16]
	}
	return dev, st, nil
}

// AllDiskStats returns every line of /proc/diskstats, by device, and
// each device's kernel name.
func (fs FS) AllDiskStats() (map[DevNum]DiskStats, map[DevNum]string, error) {
	path := filepath.Join(fs.proc, "diskstats")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	stats, err := ParseDiskstats(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	names := make(map[DevNum]string, len(stats))
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if dev, err := ParseDevNum(f[0] + ":" + f[1]); err == nil {
			names[dev] = f[2]
		}
	}
	return stats, names, nil
}

// DiskStats returns the /proc/diskstats counters of one device or partition.
func (fs FS) DiskStats(dev DevNum) (DiskStats, error) {
	path := filepath.Join(fs.proc, "diskstats")
	all, err := parseFile(path, ParseDiskstats)
	if err != nil {
		return DiskStats{}, err
	}
	st, ok := all[dev]
	if !ok {
		return DiskStats{}, fmt.Errorf("%s: device %s: %w", path, dev, ErrNoDevice)
	}
	return st, nil
}
