package fit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
)

// Need is what a workload asks of a volume: read and write IOPS at a
// block size, optionally at a concurrency (queue depth × jobs) and under
// latency bounds.
type Need struct {
	Name        string
	ReadIOPS    float64
	WriteIOPS   float64
	BlockSize   int64
	Concurrency int // 0: not given
	Bounds      []report.Bound
}

// Total is the need's IOPS.
func (n Need) Total() float64 { return n.ReadIOPS + n.WriteIOPS }

// ReadPct is the need's read share in %.
func (n Need) ReadPct() float64 { return 100 * n.ReadIOPS / n.Total() }

// NeedError names the field of a need that is wrong.
type NeedError struct {
	Field, Value, Why string
}

func (e *NeedError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Why)
	}
	return fmt.Sprintf("%s=%s: %s", e.Field, e.Value, e.Why)
}

// ParseNeed reads "read=8000,write=2000,bs=16k,qd=32,p99<2ms": read and
// write IOPS (either may be left out for 0, not both), the block size,
// and optionally the concurrency (qd: queue depth × jobs) and latency
// bounds (p50, p99, p99.9 or mean below a duration).
func ParseNeed(s string) (Need, error) {
	var n Need
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if key, val, ok := strings.Cut(part, "<"); ok {
			if err := n.addBound(strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
				return Need{}, err
			}
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok {
			return Need{}, &NeedError{Field: part, Why: "not key=value (read, write, bs, qd) or a bound such as p99<2ms"}
		}
		if seen[key] {
			return Need{}, &NeedError{Field: key, Value: val, Why: "given twice"}
		}
		seen[key] = true
		if err := n.set(key, val); err != nil {
			return Need{}, err
		}
	}
	return n, n.check()
}

func (n *Need) set(key, val string) error {
	switch key {
	case "read", "write":
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return &NeedError{Field: key, Value: val, Why: "not a number of IOPS"}
		}
		if key == "read" {
			n.ReadIOPS = v
		} else {
			n.WriteIOPS = v
		}
	case "bs":
		b, err := units.ParseSize(val)
		if err != nil || b < 512 || b%512 != 0 {
			return &NeedError{Field: key, Value: val, Why: "not a block size (a multiple of 512 bytes, e.g. 8k)"}
		}
		n.BlockSize = b
	case "qd":
		q, err := strconv.Atoi(val)
		if err != nil || q < 1 {
			return &NeedError{Field: key, Value: val, Why: "not a concurrency (I/Os in flight: queue depth × jobs, 1 or more)"}
		}
		n.Concurrency = q
	default:
		return &NeedError{Field: key, Value: val, Why: "unknown (read, write, bs, qd, or a bound such as p99<2ms)"}
	}
	return nil
}

// addBound keeps the bound's text as the field at fault, so that a
// workload file can name it as its latency.
func (n *Need) addBound(key, val string) error {
	b, err := report.ParseBound(key, val)
	var be *report.BoundError
	if errors.As(err, &be) {
		return &NeedError{Field: be.Text, Why: be.Why}
	}
	if err != nil {
		return fmt.Errorf("latency bound %s<%s: %w", key, val, err)
	}
	n.Bounds = append(n.Bounds, b)
	return nil
}

func (n *Need) check() error {
	if n.Total() <= 0 {
		return &NeedError{Field: "read", Why: "give read=N and/or write=N IOPS above 0"}
	}
	if n.BlockSize == 0 {
		return &NeedError{Field: "bs", Why: "missing: the workload's block size (e.g. bs=8k; databases: their page size)"}
	}
	return nil
}
