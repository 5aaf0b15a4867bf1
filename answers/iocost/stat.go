package iocost

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Stat is what the controller says of a device while it is enabled, in
// io.stat's cost.* keys (block/blk-iocost.c, ioc_pd_stat): the root's
// cost.vrate, the rate it runs the device at in % of the model's, and
// each cgroup's cost.usage, the device time charged to it, in µs since
// the cgroup began (updated once per period of the controller).
type Stat struct {
	VRatePct float64
	// UsageUS are the cgroups' cost.usage, in the order asked.
	UsageUS []uint64
}

// Stat reads the root's cost.vrate for the device and the cost.usage of
// each cgroup directory in groups (0 for one with no line for the
// device: it did no I/O there yet). ok is false when a line lacks the
// keys: the kernel writes them only while iocost is enabled.
func (h Host) Stat(dev string, groups ...string) (s Stat, ok bool, err error) {
	root, err := deviceLine(filepath.Join(h.CgroupRoot, "io.stat"), dev)
	if err != nil {
		return Stat{}, false, fmt.Errorf("read the controller's figures: %w", err)
	}
	v, ok := qosKeys(root)["cost.vrate"]
	if s.VRatePct, err = strconv.ParseFloat(v, 64); ok && err != nil {
		return Stat{}, false, fmt.Errorf("io.stat: cost.vrate=%q: %w", v, err)
	}
	for _, g := range groups {
		line, err := deviceLine(filepath.Join(g, "io.stat"), dev)
		if err != nil {
			return Stat{}, false, fmt.Errorf("read the controller's figures: %w", err)
		}
		var n uint64
		if u, okU := qosKeys(line)["cost.usage"]; okU {
			if n, err = strconv.ParseUint(u, 10, 64); err != nil {
				return Stat{}, false, fmt.Errorf("%s/io.stat: cost.usage=%q: %w", g, u, err)
			}
		} else if line != "" {
			ok = false // listed, without the controller's keys: it is off
		}
		s.UsageUS = append(s.UsageUS, n)
	}
	return s, ok, nil
}
