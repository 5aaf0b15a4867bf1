// Package iocost derives the kernel's iocost parameters from measured
// cells and checks them against every other cell measured: the linear
// cost model of io.cost.model, the QoS targets of io.cost.qos, and the
// IOPS the model predicts for a pattern at full vrate. The arithmetic is
// block/blk-iocost.c's, in the kernel's own units (vtime, 2^37 a
// second), so that a prediction is what the kernel would charge. A Host
// (Resolve finds a device's disk and the controller's files) writes the
// lines to the cgroup2 root and restores those that were there; iocost
// apply, show and reset (ApplyRequest, Request) return what they did,
// with its text.
package iocost

import (
	"fmt"
	"strconv"
	"strings"
)

// The kernel's constants (block/blk-iocost.c).
const (
	// VtimePerSec is one second of device time in vtime.
	VtimePerSec = uint64(1) << 37
	// PageSize is the unit the per-page cost is charged in.
	PageSize = 4096
	// RandioPages is the seek, in pages, beyond which a bio is random: 16
	// MiB.
	RandioPages = 4096
)

// Model is io.cost.model's linear model: a direction's sequential
// bandwidth in bytes a second, and its 4K sequential and random IOPS.
type Model struct {
	RBps, RSeqIOPS, RRandIOPS uint64
	WBps, WSeqIOPS, WRandIOPS uint64
}

// Coefs are the model's coefficients in vtime, as the kernel computes
// them: the cost of a page of transfer, and the base cost of a sequential
// and of a random I/O beyond its pages.
type Coefs struct {
	RPage, RSeqIO, RRandIO uint64
	WPage, WSeqIO, WRandIO uint64
}

// Coefs computes the coefficients as the kernel's calc_lcoefs does, with
// its rounding: page = ⌈VtimePerSec / ⌈bps/4096⌉⌉ (1 when the pages
// round to nothing), seqio = ⌈VtimePerSec / seqiops⌉ − page when that is
// positive, else 0; randio the same with randiops.
func (m Model) Coefs() Coefs {
	var c Coefs
	c.RPage, c.RSeqIO, c.RRandIO = lcoefs(m.RBps, m.RSeqIOPS, m.RRandIOPS)
	c.WPage, c.WSeqIO, c.WRandIO = lcoefs(m.WBps, m.WSeqIOPS, m.WRandIOPS)
	return c
}

func lcoefs(bps, seqiops, randiops uint64) (page, seqio, randio uint64) {
	if bps > 0 {
		pages := bps/PageSize + min(bps%PageSize, 1)
		if pages > 0 {
			page = divUp(VtimePerSec, pages)
		} else {
			page = 1
		}
	}
	base := func(iops uint64) uint64 {
		if iops == 0 {
			return 0
		}
		if v := divUp(VtimePerSec, iops); v > page {
			return v - page
		}
		return 0
	}
	return page, base(seqiops), base(randiops)
}

func divUp(a, b uint64) uint64 { return a/b + min(a%b, 1) }

// BioCost is the vtime the kernel charges one bio of bytes (a write or a
// read), sequential or random (a seek of more than 16 MiB from the
// cgroup's last bio): the base cost of its kind plus its pages, counted
// as ⌊sectors/8⌋ and at least one (calc_vtime_cost_builtin).
func (c Coefs) BioCost(write bool, bytes int64, random bool) uint64 {
	if bytes <= 0 {
		return 0 // an empty bio (a flush) costs nothing
	}
	page, seq, rnd := c.RPage, c.RSeqIO, c.RRandIO
	if write {
		page, seq, rnd = c.WPage, c.WSeqIO, c.WRandIO
	}
	pages := max(uint64(bytes/512)>>3, 1)
	base := seq
	if random {
		base = rnd
	}
	return base + pages*page
}

// Line is the model as io.cost.model takes it, for the device dev
// ("259:0"); ctrl=user makes the kernel keep it.
func (m Model) Line(dev string) string {
	return fmt.Sprintf("%s ctrl=user model=linear rbps=%d rseqiops=%d rrandiops=%d wbps=%d wseqiops=%d wrandiops=%d",
		dev, m.RBps, m.RSeqIOPS, m.RRandIOPS, m.WBps, m.WSeqIOPS, m.WRandIOPS)
}

// QoS is io.cost.qos's targets: the percentile of reads (RPct) that must
// complete within RLatUS µs, the same for writes, and the range the
// vrate may move in, in percent.
type QoS struct {
	RPct, WPct     float64
	RLatUS, WLatUS uint64
	Min, Max       float64
}

// Line is the QoS as io.cost.qos takes it; enable=1 turns iocost on.
func (q QoS) Line(dev string) string {
	return fmt.Sprintf("%s enable=1 ctrl=user rpct=%.2f rlat=%d wpct=%.2f wlat=%d min=%.2f max=%.2f",
		dev, q.RPct, q.RLatUS, q.WPct, q.WLatUS, q.Min, q.Max)
}

// Limits the values are checked against before anything is written: the
// kernel's (percentiles 0–100, vrate 1–10000 %, min ≤ max) and one of
// ours, a bound on every model figure, that no real device nears and that
// keeps the kernel's ⌈bps/4096⌉ from wrapping (a huge bps once made the
// kernel divide by zero).
const (
	MaxModelValue = uint64(1) << 48
	MinVrate      = 1.0
	MaxVrate      = 10000.0
)

// Check says what is out of range in a model, or nil.
func (m Model) Check() error {
	for _, f := range []struct {
		name string
		v    uint64
	}{{"rbps", m.RBps}, {"rseqiops", m.RSeqIOPS}, {"rrandiops", m.RRandIOPS},
		{"wbps", m.WBps}, {"wseqiops", m.WSeqIOPS}, {"wrandiops", m.WRandIOPS}} {
		switch {
		case f.v == 0:
			return fmt.Errorf("%s is 0: the model needs every figure measured", f.name)
		case f.v > MaxModelValue:
			return fmt.Errorf("%s=%d is beyond %d, more than any device does", f.name, f.v, MaxModelValue)
		}
	}
	return nil
}

// Check says what is out of range in a QoS, or nil.
func (q QoS) Check() error {
	switch {
	case q.RPct < 0 || q.RPct > 100 || q.WPct < 0 || q.WPct > 100:
		return fmt.Errorf("rpct=%g and wpct=%g must be percentiles from 0 to 100", q.RPct, q.WPct)
	case q.RLatUS > MaxModelValue || q.WLatUS > MaxModelValue:
		return fmt.Errorf("rlat=%d or wlat=%d µs is out of range", q.RLatUS, q.WLatUS)
	case q.Min < MinVrate || q.Max > MaxVrate:
		return fmt.Errorf("min=%g and max=%g must lie from %g to %g %%", q.Min, q.Max, MinVrate, MaxVrate)
	case q.Min > q.Max:
		return fmt.Errorf("min=%g is above max=%g (the kernel refuses it)", q.Min, q.Max)
	}
	return nil
}

// ParseModelLine reads an io.cost.model line as the kernel writes it back
// ("259:0 ctrl=user model=linear rbps=… wrandiops=…"): the device, the
// ctrl ("auto" or "user") and the model.
func ParseModelLine(line string) (dev, ctrl string, m Model, err error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", "", Model{}, fmt.Errorf("io.cost.model line %q: want MAJ:MIN key=value…", line)
	}
	dst := map[string]*uint64{"rbps": &m.RBps, "rseqiops": &m.RSeqIOPS, "rrandiops": &m.RRandIOPS,
		"wbps": &m.WBps, "wseqiops": &m.WSeqIOPS, "wrandiops": &m.WRandIOPS}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", "", Model{}, fmt.Errorf("io.cost.model line %q: %q is not key=value", line, kv)
		}
		switch k {
		case "ctrl":
			ctrl = v
		case "model":
			if v != "linear" {
				return "", "", Model{}, fmt.Errorf("io.cost.model line %q: model %q is not linear", line, v)
			}
		default:
			p, known := dst[k]
			if !known {
				continue // a key a newer kernel adds
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return "", "", Model{}, fmt.Errorf("io.cost.model line %q: %s: %w", line, k, err)
			}
			*p = n
		}
	}
	return f[0], ctrl, m, nil
}
