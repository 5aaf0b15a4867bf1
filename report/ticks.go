package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
)

// latencyTicks marks a logarithmic latency axis. Over two decades or
// more, the powers of ten are labelled, as usual. A narrower range would
// show one label or none (p99 from 100 to 1,500 µs has only "100" and
// "1000" near it), so there the 2× and 5× ticks of each decade are
// labelled too: 1-2-5 is the series that keeps labels roughly evenly
// spaced on a log axis. Where even that leaves fewer than two labels
// inside the axis (a range under 2.5×), every integer multiple is, and
// the axis's ends are too, rounded inwards to two significant digits.
// Unlabelled ticks remain at every multiple of each decade, so the
// axis reads as logarithmic.
type latencyTicks struct{}

var _ plot.Ticker = latencyTicks{}

// wideDecades is the span, in decades, from which powers of ten suffice.
const wideDecades = 2

func (latencyTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || hi < lo || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return nil // no data on the axis: nothing to mark
	}
	labelled := func(int) bool { return false }
	if math.Log10(hi/lo) < wideDecades {
		labelled = func(m int) bool { return m == 2 || m == 5 }
		if labelsWithin(lo, hi, labelled) < 2 {
			labelled = func(int) bool { return true }
		}
	}
	var ticks []plot.Tick
	if math.Log10(hi/lo) < wideDecades && labelsWithin(lo, hi, labelled) < 2 {
		// Fewer than two multiples of a decade inside (1,119 to 1,679 µs, a
		// single cell's axis): its ends, rounded inwards to two
		// significant digits, so the axis still reads.
		for _, v := range []float64{roundSignificant(lo, math.Ceil), roundSignificant(hi, math.Floor)} {
			if v >= lo && v <= hi && !isMultipleOfDecade(v) && (len(ticks) == 0 || v != ticks[0].Value) {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			v := multipleOfDecade(m, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || labelled(m) {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	slices.SortFunc(ticks, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
	return ticks
}

// isMultipleOfDecade tells whether v is m×10^e for a digit m: a tick
// the decades already place.
func isMultipleOfDecade(v float64) bool {
	e := int(math.Floor(math.Log10(v)))
	m := math.Round(v / math.Pow10(e))
	return m >= 1 && m <= 9 && multipleOfDecade(int(m), e) == v
}

// labelsWithin counts the ticks inside [lo, hi] that would be labelled:
// the powers of ten and the multiples labelled picks.
func labelsWithin(lo, hi float64, labelled func(int) bool) int {
	n := 0
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			if v := multipleOfDecade(m, e); v >= lo && v <= hi && (m == 1 || labelled(m)) {
				n++
			}
		}
	}
	return n
}

// multipleOfDecade is m×10^e, divided rather than multiplied below 1 so
// that 3×10^-1 is the float nearest 0.3 and labels as "0.3".
func multipleOfDecade(m, e int) float64 {
	if e < 0 {
		return float64(m) / math.Pow10(-e)
	}
	return float64(m) * math.Pow10(e)
}

// rateTicks marks a linear IOPS axis where gonum's default would: its
// labels are written as the tables write IOPS, 25,000 rather than
// 25000.00.
type rateTicks struct{}

var _ plot.Ticker = rateTicks{}

func (rateTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = FormatValue(IOPS, ticks[i].Value)
		}
	}
	return ticks
}

// roundSignificant rounds v to two significant digits with round (Ceil
// or Floor).
func roundSignificant(v float64, round func(float64) float64) float64 {
	e := int(math.Floor(math.Log10(v))) - 1
	if e < 0 {
		p := math.Pow10(-e)
		return round(v*p) / p
	}
	p := math.Pow10(e)
	return round(v/p) * p
}

// clockTicks marks a time axis of Unix seconds at round times of the
// clock in loc (every 10 minutes, every hour, ...), labelled "15:04", with
// seconds where the steps are shorter than a minute and by the date where
// they are days: a reader places what happened by the clock, and the
// linear ticks of an axis in seconds since 1970 fall on no round time.
type clockTicks struct{ loc *time.Location }

var _ plot.Ticker = clockTicks{}

// clockSteps are the round steps, shortest first; the axis takes the
// shortest that leaves no more than maxClockTicks steps along it.
var clockSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

const maxClockTicks = 8

// clockEndRoom is the share of the axis at its right end where a tick
// keeps its mark but not its label.
const clockEndRoom = 0.05

func (c clockTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	step := clockSteps[len(clockSteps)-1]
	for _, s := range clockSteps {
		if (hi-lo)/s.Seconds() <= maxClockTicks {
			step = s
			break
		}
	}
	for (hi-lo)/step.Seconds() > maxClockTicks {
		step *= 2 // weeks and more: whole days still
	}
	layout := "15:04"
	switch {
	case step < time.Minute:
		layout = "15:04:05"
	case step >= 24*time.Hour:
		layout = "Jan 2"
	}
	// Round in the zone's clock, not in UTC's: 09:30 in +05:30 is a
	// round half hour that UTC's multiples miss.
	_, off := time.Unix(int64(lo), 0).In(c.loc).Zone()
	st := step.Seconds()
	var ticks []plot.Tick
	for v := math.Ceil((lo+float64(off))/st)*st - float64(off); v <= hi; v += st {
		t := plot.Tick{Value: v}
		// A label centred on a tick at the right end would reach past
		// the chart's edge, which cuts it.
		if hi-v >= clockEndRoom*(hi-lo) {
			t.Label = time.Unix(int64(v), 0).In(c.loc).Format(layout)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
