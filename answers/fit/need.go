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
	// Shape is how a system of a version 2 workload file makes its I/O;
	// nil otherwise.
	Shape *Shape
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
	return n, n.check("read", "bs")
}

func (n *Need) set(key, val string) error {
	switch key {
	case "read", "write":
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || !isIOPS(v) {
			return &NeedError{Field: key, Value: val, Why: notIOPS}
		}
		if key == "read" {
			n.ReadIOPS = v
		} else {
			n.WriteIOPS = v
		}
	case "bs":
		b, err := blockSize(key, val)
		if err != nil {
			return err
		}
		n.BlockSize = b
	case "qd":
		q, err := strconv.Atoi(val)
		if err != nil {
			return &NeedError{Field: key, Value: val, Why: notConcurrency}
		}
		if n.Concurrency, err = concurrency(key, q); err != nil {
			return err
		}
	default:
		return &NeedError{Field: key, Value: val, Why: "unknown (read, write, bs, qd, or a bound such as p99<2ms)"}
	}
	return nil
}

const (
	notIOPS        = "not a number of IOPS"
	notConcurrency = "not a concurrency (I/Os in flight: queue depth × jobs, 1 or more)"
)

// isIOPS tells whether v is a number of IOPS: finite, not negative.
func isIOPS(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// iops is the rate v of field, a number of IOPS.
func iops(field string, v float64) (float64, error) {
	if !isIOPS(v) {
		return 0, &NeedError{Field: field, Value: strconv.FormatFloat(v, 'g', -1, 64), Why: notIOPS}
	}
	return v, nil
}

// blockSize is the block size of field: a size (units.ParseSize), a
// multiple of 512 bytes.
func blockSize(field, val string) (int64, error) {
	b, err := units.ParseSize(val)
	if err != nil || b < 512 || b%512 != 0 {
		return 0, &NeedError{Field: field, Value: val, Why: "not a block size (a multiple of 512 bytes, e.g. 8k)"}
	}
	return b, nil
}

// concurrency is the concurrency of field: 1 or more.
func concurrency(field string, q int) (int, error) {
	if q < 1 {
		return 0, &NeedError{Field: field, Value: strconv.Itoa(q), Why: notConcurrency}
	}
	return q, nil
}

// addBound keeps the bound's text as the field at fault, so that a
// workload file can name it as its latency. A metric bound twice is
// refused: the need would hold two limits for one figure.
func (n *Need) addBound(key, val string) error {
	b, err := report.ParseBound(key, val)
	var be *report.BoundError
	if errors.As(err, &be) {
		return &NeedError{Field: be.Text, Why: be.Why}
	}
	if err != nil {
		return fmt.Errorf("latency bound %s<%s: %w", key, val, err)
	}
	for _, had := range n.Bounds {
		if had.Metric == b.Metric {
			return &NeedError{Field: key + "<" + val, Why: "a bound of " + key + " given twice"}
		}
	}
	n.Bounds = append(n.Bounds, b)
	return nil
}

// check refuses a need without IOPS or without a block size, naming the
// fields as its reader does (read and bs, or a workload's reads and
// block_size).
func (n *Need) check(read, bs string) error {
	if n.Total() <= 0 {
		return &NeedError{Field: read, Why: "give the read and/or write IOPS, above 0"}
	}
	if n.BlockSize == 0 {
		return &NeedError{Field: bs, Why: "missing: the workload's block size (e.g. 8k; databases: their page size)"}
	}
	return nil
}
