package iocost

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// CellCheck is one measured cell against the model: the IOPS the model
// lets through at full vrate (100 %), and what the device did.
type CellCheck struct {
	Name      string          `json:"name"`
	Pattern   results.Pattern `json:"pattern"`
	Predicted float64         `json:"predicted_iops"`
	Measured  float64         `json:"measured_iops"`
	// Ratio is Measured over Predicted: below 1, the model is optimistic
	// for the cell (it would admit more than the device does).
	Ratio float64 `json:"ratio"`
	// Capacity marks the cell with the most IOPS of its shape (the same
	// pattern but for its queue depth and jobs): what the device can do
	// with that shape, the figure a model is to be judged on. A cell
	// below its shape's capacity was limited by its own concurrency.
	Capacity bool `json:"capacity"`
	// Judged marks the capacity cells the model is judged on: those with
	// at least MinJudgedConcurrency I/Os in flight. With fewer, a cell's
	// IOPS are the device's latency, not its capacity, which is what the
	// model speaks of.
	Judged bool `json:"judged"`
}

// MinJudgedConcurrency is the least queue depth × jobs of a cell the
// model is judged on.
const MinJudgedConcurrency = 8

// Check is the model against every closed-loop cell.
type Check struct {
	Cells []CellCheck `json:"cells"`
	// Worst are the judged cells the model is most optimistic for,
	// lowest ratio first (at most five).
	Worst []CellCheck `json:"worst"`
	// HonestVratePct is the vrate at which the model's prediction meets
	// the worst judged cell (100 when the model is optimistic for none):
	// io.cost.qos's max at or below it keeps the model from promising
	// what the device does not do.
	HonestVratePct float64 `json:"honest_vrate_pct"`
	// SpanBytes is the extent random cells seek over, which sets how many
	// of their I/Os the kernel charges as random (a seek beyond 16 MiB).
	SpanBytes int64 `json:"span_bytes"`
	// MaxBioBytes is the largest request the device takes: a larger I/O
	// is split, and each piece pays its base cost.
	MaxBioBytes int64    `json:"max_bio_bytes,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// CheckModel predicts every closed-loop cell with the model and sets the
// prediction against the measurement. span is the size the random cells
// were spread over (the target's size), maxBio the most bytes the device
// takes in one request (0: no limit known), beyond which an I/O is split
// into bios that are each charged their base cost.
func CheckModel(m Model, cells []results.Result, span, maxBio int64) Check {
	c := m.Coefs()
	ch := Check{SpanBytes: span, MaxBioBytes: maxBio, HonestVratePct: 100}
	capIdx := map[string]int{}
	for _, r := range cells {
		if r.Pattern.Rate.Open() || r.Error != nil || r.Total.IOPS <= 0 {
			continue
		}
		p := c.PredictIOPS(r.Pattern, span, maxBio)
		cc := CellCheck{Name: r.Name, Pattern: r.Pattern, Predicted: math.Round(p), Measured: r.Total.IOPS, Ratio: ratio(r.Total.IOPS, p)}
		ch.Cells = append(ch.Cells, cc)
		k := shapeKey(r.Pattern)
		if i, ok := capIdx[k]; !ok || cc.Measured > ch.Cells[i].Measured {
			capIdx[k] = len(ch.Cells) - 1
		}
	}
	var caps []CellCheck
	for _, i := range capIdx {
		c := &ch.Cells[i]
		c.Capacity = true
		c.Judged = c.Pattern.QueueDepth*max(c.Pattern.Jobs, 1) >= MinJudgedConcurrency
	}
	for _, cc := range ch.Cells {
		if cc.Judged {
			caps = append(caps, cc)
		}
	}
	sortByRatio(caps)
	for _, cc := range caps {
		if len(ch.Worst) == 5 || cc.Ratio >= 1 {
			break
		}
		ch.Worst = append(ch.Worst, cc)
	}
	if len(ch.Worst) > 0 {
		ch.HonestVratePct = math.Floor(100*ch.Worst[0].Ratio*100) / 100
		ch.Notes = append(ch.Notes, fmt.Sprintf("the model is optimistic for %d of the %d shapes judged at their capacity; at a vrate of %.2f %% it is not for any", optimistic(caps), len(caps), ch.HonestVratePct))
	}
	ch.Notes = append(ch.Notes, fmt.Sprintf("a shape is judged at its capacity, its cell with the most IOPS, when that cell kept at least %d I/Os in flight: with fewer, its IOPS are the device's latency", MinJudgedConcurrency))
	ch.Notes = append(ch.Notes, "random cells are charged as the kernel would: a seek beyond 16 MiB from the last I/O is random, nearer is sequential, taken for uniformly random offsets over the span; skewed offsets seek nearer, and so cost less than predicted")
	return ch
}

func optimistic(caps []CellCheck) int {
	n := 0
	for _, c := range caps {
		if c.Ratio < 1 {
			n++
		}
	}
	return n
}

// shapeKey is a pattern less its concurrency.
func shapeKey(p results.Pattern) string {
	p.QueueDepth, p.Jobs = 0, 0
	return p.Name()
}

// PredictIOPS is the IOPS the model lets a pattern have at full vrate:
// one second of vtime over the mean cost of its I/Os, reads and writes
// in its mix, each size of a block-size mix in its share, and random
// I/Os charged as random or sequential by how far they seek over span.
func (c Coefs) PredictIOPS(p results.Pattern, span, maxBio int64) float64 {
	cost := c.MeanCost(p, span, maxBio)
	if cost <= 0 {
		return 0
	}
	return float64(VtimePerSec) / cost
}

// MeanCost is the mean vtime an I/O of the pattern costs. An I/O larger
// than maxBio is split: its first piece seeks as the I/O does, the others
// follow it and are charged as sequential.
func (c Coefs) MeanCost(p results.Pattern, span, maxBio int64) float64 {
	far := 0.0 // the share of I/Os charged as random
	if p.Access == results.Random {
		far = FarShare(span)
	}
	dir := func(write bool, sizes []pattern.SizeShare) float64 {
		var sum float64
		for _, s := range sizes {
			first, rest := s.Size, int64(0)
			if maxBio > 0 && s.Size > maxBio {
				first, rest = maxBio, s.Size-maxBio
			}
			rnd, seq := float64(c.BioCost(write, first, true)), float64(c.BioCost(write, first, false))
			cost := far*rnd + (1-far)*seq
			for ; rest > 0; rest -= maxBio {
				cost += float64(c.BioCost(write, min(rest, maxBio), false))
			}
			sum += float64(s.Pct) / 100 * cost
		}
		return sum
	}
	reads, writes := []pattern.SizeShare{{Size: p.BlockSize, Pct: 100}}, []pattern.SizeShare{{Size: p.BlockSize, Pct: 100}}
	if p.BSSplit != "" {
		if b, err := pattern.ParseBSSplit(p.BSSplit); err == nil {
			reads, writes = b.Read, b.Write
			if len(writes) == 0 {
				writes = reads
			}
		}
	}
	r := float64(p.ReadPct) / 100
	return r*dir(false, reads) + (1-r)*dir(true, writes)
}

// FarShare is the share of uniformly random offsets over span that lie
// more than 16 MiB from the one before: (1 − d/span)² for two independent
// offsets, 0 when the span is no larger than 16 MiB.
func FarShare(span int64) float64 {
	d := float64(RandioPages * PageSize)
	if float64(span) <= d {
		return 0
	}
	x := 1 - d/float64(span)
	return x * x
}

// ratio is a/b, or NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// sortByRatio orders cell checks from the most optimistic model figure up.
func sortByRatio(c []CellCheck) {
	slices.SortStableFunc(c, func(a, b CellCheck) int { return cmp.Compare(a.Ratio, b.Ratio) })
}
