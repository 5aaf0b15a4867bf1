package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// ErrBadCap marks a --cap string that cannot be a limit.
var ErrBadCap = errors.New("invalid cap")

// Limit is a throttle plan for one device: plain data, applied by Create.
// Zero means "no limit" for that key.
type Limit struct {
	Device    sysfs.DevNum
	ReadIOPS  uint64
	WriteIOPS uint64
	ReadBPS   uint64
	WriteBPS  uint64
}

// tighten lowers each key of l to o's where o's is stricter (0 = no
// limit), recording in from which cgroup (dir) each key then comes from.
func (l *Limit) tighten(o Limit, dir string, from map[string]string) {
	for _, k := range []struct {
		name     string
		mine     *uint64
		ancestor uint64
	}{
		{"riops", &l.ReadIOPS, o.ReadIOPS}, {"wiops", &l.WriteIOPS, o.WriteIOPS},
		{"rbps", &l.ReadBPS, o.ReadBPS}, {"wbps", &l.WriteBPS, o.WriteBPS},
	} {
		if k.ancestor > 0 && (*k.mine == 0 || k.ancestor < *k.mine) {
			*k.mine = k.ancestor
			from[k.name] = dir
		}
	}
}

// Record is the limit as a results document records it, for a cgroup of
// the given version at path.
func (l Limit) Record(version int, path string) *results.Cap {
	return &results.Cap{CgroupVersion: version, Cgroup: path, Device: l.Device.String(),
		ReadIOPS: l.ReadIOPS, WriteIOPS: l.WriteIOPS, ReadBPS: l.ReadBPS, WriteBPS: l.WriteBPS}
}

// LimitOf is the limit a recorded cap describes (nil: none).
func LimitOf(c *results.Cap) Limit {
	if c == nil {
		return Limit{}
	}
	dev, _ := sysfs.ParseDevNum(c.Device)
	return Limit{Device: dev, ReadIOPS: c.ReadIOPS, WriteIOPS: c.WriteIOPS, ReadBPS: c.ReadBPS, WriteBPS: c.WriteBPS}
}

// Empty reports whether the limit caps nothing.
func (l Limit) Empty() bool {
	return l.ReadIOPS == 0 && l.WriteIOPS == 0 && l.ReadBPS == 0 && l.WriteBPS == 0
}

// String renders the limit as io.max does: "254:0 rbps=max wbps=max riops=3000 wiops=max".
func (l Limit) String() string {
	v := func(n uint64) string {
		if n == 0 {
			return "max"
		}
		return strconv.FormatUint(n, 10)
	}
	return fmt.Sprintf("%s rbps=%s wbps=%s riops=%s wiops=%s", l.Device, v(l.ReadBPS), v(l.WriteBPS), v(l.ReadIOPS), v(l.WriteIOPS))
}

// V1Lines are the limit as cgroup v1 blkio throttle files take it, one
// "file: MAJ:MIN value" line per key that caps something.
func (l Limit) V1Lines() []string {
	var lines []string
	for _, k := range []struct {
		file string
		v    uint64
	}{
		{"blkio.throttle.read_iops_device", l.ReadIOPS}, {"blkio.throttle.write_iops_device", l.WriteIOPS},
		{"blkio.throttle.read_bps_device", l.ReadBPS}, {"blkio.throttle.write_bps_device", l.WriteBPS},
	} {
		if k.v > 0 {
			lines = append(lines, fmt.Sprintf("%s: %s %d", k.file, l.Device, k.v))
		}
	}
	return lines
}

// ParseCap parses "riops=N,wiops=N,rbps=SIZE,wbps=SIZE" (any subset; sizes
// such as 100MiB). The device is filled in later from the target.
func ParseCap(s string) (Limit, error) {
	var l Limit
	err := ParseLimitKeys(s, []LimitKey{{"riops", &l.ReadIOPS}, {"wiops", &l.WriteIOPS}, {"rbps", &l.ReadBPS}, {"wbps", &l.WriteBPS}}, ErrBadCap)
	return l, err
}

// LimitKey is a key of a limit string ("riops=3000") and where its value
// goes: a key whose name ends in "bps" takes a size (100MiB), any other
// a whole number, both positive.
type LimitKey struct {
	Name string
	Dst  *uint64
}

// ParseLimitKeys parses a limit string, "key=value,...", into keys: any
// subset of them, each at most once, named in any case. The grammar of
// --cap and of the limits a volume is sold with (capverify's), one
// parser for both; an error wraps bad and names the part at fault.
func ParseLimitKeys(s string, keys []LimitKey, bad error) error {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	if strings.TrimSpace(s) == "" {
		give := make([]string, len(keys))
		for i, k := range keys {
			give[i] = k.Name + "=N"
			if isSize(k.Name) {
				give[i] = k.Name + "=SIZE"
			}
		}
		last := len(give) - 1
		return fmt.Errorf("%w: empty (give %s or %s)", bad, strings.Join(give[:last], ", "), give[last])
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", bad, part)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if seen[key] {
			return fmt.Errorf("%w: %s given twice", bad, key)
		}
		seen[key] = true
		i := slices.Index(names, key)
		if i < 0 {
			return fmt.Errorf("%w: unknown key %q (%s)", bad, key, strings.Join(names, ", "))
		}
		var n int64
		var err error
		size := isSize(key)
		if size {
			n, err = units.ParseSize(val)
		} else {
			n, err = strconv.ParseInt(val, 10, 64)
		}
		if err != nil || n <= 0 {
			what := "a positive whole number"
			if size {
				what = "a positive size such as 100MiB"
			}
			return fmt.Errorf("%w: %s=%s is not %s", bad, key, val, what)
		}
		*keys[i].Dst = uint64(n)
	}
	return nil
}

// isSize tells whether a limit's key takes a size: a rate of bytes.
func isSize(key string) bool { return strings.HasSuffix(key, "bps") }

// v1Resources plans the blkio.throttle.* files for a limit.
func (l Limit) v1Resources() *specs.LinuxResources {
	dev := func(rate uint64) []specs.LinuxThrottleDevice {
		if rate == 0 {
			return nil
		}
		d := specs.LinuxThrottleDevice{Rate: rate}
		d.Major, d.Minor = int64(l.Device.Major), int64(l.Device.Minor)
		return []specs.LinuxThrottleDevice{d}
	}
	return &specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{
		ThrottleReadIOPSDevice:  dev(l.ReadIOPS),
		ThrottleWriteIOPSDevice: dev(l.WriteIOPS),
		ThrottleReadBpsDevice:   dev(l.ReadBPS),
		ThrottleWriteBpsDevice:  dev(l.WriteBPS),
	}}
}

// devLines calls fn for every non-blank line of a cgroup file that starts
// with a device number ("MAJ:MIN ..."), with the fields after it. v1's
// summary lines ("Total N") are skipped; any other line that does not
// start with a device number is an error naming what and the line.
func devLines(r io.Reader, what string, fn func(dev sysfs.DevNum, rest []string) error) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "Total" {
			continue
		}
		dev, err := sysfs.ParseDevNum(f[0])
		if err == nil {
			err = fn(dev, f[1:])
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", what, n, err)
		}
	}
	return sc.Err()
}

// keyValues parses the "key=value" fields of a v2 line into the fields
// named in dst; "max" reads as 0 (no limit). Keys not in dst (ones a
// newer kernel adds, such as io.stat's dbytes) are skipped.
func keyValues(fields []string, dst map[string]*uint64) error {
	for _, kv := range fields {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", kv)
		}
		p, known := dst[k]
		if !known || v == "max" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", kv, err)
		}
		*p = n
	}
	return nil
}

// ParseIOMax parses io.max as the kernel writes it back: one line per
// device, every key present, "max" for no limit
// ("8:16 rbps=2097152 wbps=max riops=max wiops=120").
func ParseIOMax(r io.Reader) (map[sysfs.DevNum]Limit, error) {
	return parseDevKeys(r, "io.max", func(dev sysfs.DevNum, l *Limit) map[string]*uint64 {
		l.Device = dev
		return map[string]*uint64{"riops": &l.ReadIOPS, "wiops": &l.WriteIOPS, "rbps": &l.ReadBPS, "wbps": &l.WriteBPS}
	})
}

// parseDevKeys parses a file of one "MAJ:MIN key=value ..." line per
// device into a T per device, fields naming where each key goes.
func parseDevKeys[T any](r io.Reader, file string, fields func(sysfs.DevNum, *T) map[string]*uint64) (map[sysfs.DevNum]T, error) {
	out := map[sysfs.DevNum]T{}
	err := devLines(r, file, func(dev sysfs.DevNum, rest []string) error {
		var v T
		if err := keyValues(rest, fields(dev, &v)); err != nil {
			return err
		}
		out[dev] = v
		return nil
	})
	return out, err
}

// parseV1Throttle parses a blkio.throttle.*_device file ("254:0 3000"
// per line) into rates by device.
func parseV1Throttle(r io.Reader) (map[sysfs.DevNum]uint64, error) {
	out := map[sysfs.DevNum]uint64{}
	err := devLines(r, "throttle", func(dev sysfs.DevNum, rest []string) error {
		if len(rest) != 1 {
			return fmt.Errorf("%q is not one rate", strings.Join(rest, " "))
		}
		rate, err := strconv.ParseUint(rest[0], 10, 64)
		out[dev] = rate
		return err
	})
	return out, err
}

// Counters are a cgroup's completed I/Os on one device, as the kernel
// counts them. Discards are counted apart from writes on both versions.
type Counters struct {
	ReadIOs, WriteIOs, ReadBytes, WriteBytes uint64
	DiscardIOs, DiscardBytes                 uint64
}

// ParseIOStat parses v2 io.stat ("254:0 rbytes=1 wbytes=2 rios=3 wios=4
// dbytes=0 dios=0"); keys a newer kernel adds are skipped.
func ParseIOStat(r io.Reader) (map[sysfs.DevNum]Counters, error) {
	return parseDevKeys(r, "io.stat", func(_ sysfs.DevNum, c *Counters) map[string]*uint64 {
		return map[string]*uint64{"rios": &c.ReadIOs, "wios": &c.WriteIOs, "rbytes": &c.ReadBytes, "wbytes": &c.WriteBytes,
			"dios": &c.DiscardIOs, "dbytes": &c.DiscardBytes}
	})
}

// V1Ops are one device's line group of a v1 blkio statistic file: its
// Read, Write and Discard operations (Sync, Async and Total are sums of
// them).
type V1Ops struct {
	Read, Write, Discard uint64
}

// ParseV1Serviced parses blkio.throttle.io_serviced or io_service_bytes
// (and their _recursive forms): "254:0 Read 12" lines.
func ParseV1Serviced(r io.Reader) (map[sysfs.DevNum]V1Ops, error) {
	out := map[sysfs.DevNum]V1Ops{}
	err := devLines(r, "serviced", func(dev sysfs.DevNum, rest []string) error {
		if len(rest) != 2 {
			return fmt.Errorf("%q is not an operation and a count", strings.Join(rest, " "))
		}
		n, err := strconv.ParseUint(rest[1], 10, 64)
		if err != nil {
			return err
		}
		v := out[dev]
		switch rest[0] {
		case "Read":
			v.Read = n
		case "Write":
			v.Write = n
		case "Discard":
			v.Discard = n
		}
		out[dev] = v
		return nil
	})
	return out, err
}

// sortedDevs lists map keys in device order, for stable output.
func sortedDevs[V any](m map[sysfs.DevNum]V) []sysfs.DevNum {
	devs := make([]sysfs.DevNum, 0, len(m))
	for d := range m {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		if devs[i].Major != devs[j].Major {
			return devs[i].Major < devs[j].Major
		}
		return devs[i].Minor < devs[j].Minor
	})
	return devs
}
