package pattern

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/results"
)

// MaxRate bounds an open-loop pattern's rate: far above what one machine
// issues, so that a typo (an extra digit) is caught.
const MaxRate = 10e6

// validateRate checks an open-loop pattern's rate against its read share.
func validateRate(p results.Pattern) error {
	r := p.Rate
	if !r.Open() {
		if r != (results.Rate{}) {
			return Fieldf("rate", "a rate must be positive")
		}
		return nil
	}
	for _, v := range []float64{r.IOPS, r.ReadIOPS, r.WriteIOPS} {
		if v < 0 || v > MaxRate || math.IsNaN(v) || math.IsInf(v, 0) {
			return Fieldf("rate", "%s is outside 0..%s IOPS", results.FormatRate(v), results.FormatRate(MaxRate))
		}
	}
	if r.IOPS > 0 && (r.ReadIOPS > 0 || r.WriteIOPS > 0) {
		return Fieldf("rate", "give a total rate or a rate per direction, not both")
	}
	switch r.Arrival {
	case "", results.ArrivalPoisson, results.ArrivalUniform:
	default:
		return Fieldf("arrival", "%q is not one of poisson, uniform", r.Arrival)
	}
	if err := validateBurst(r); err != nil {
		return err
	}
	if r.PerDirection() {
		if r.ReadIOPS > 0 && p.ReadPct == 0 || r.WriteIOPS > 0 && p.ReadPct == 100 ||
			r.ReadIOPS == 0 && p.ReadPct != 0 || r.WriteIOPS == 0 && p.ReadPct != 100 {
			return Fieldf("rate", "riops and wiops disagree with %d %% reads", p.ReadPct)
		}
	}
	return nil
}

// MaxBurst bounds the writes of one burst (Rate.BurstSize): a background
// writer's batch is dozens to hundreds of pages.
const MaxBurst = 1 << 16

// validateBurst checks a rate's write bursts: some of the writes of a
// rate per direction, two or more at a time.
func validateBurst(r results.Rate) error {
	if r.BurstIOPS == 0 && r.BurstSize == 0 {
		return nil
	}
	switch {
	case !(r.BurstIOPS > 0) || math.IsInf(r.BurstIOPS, 0):
		return Fieldf("rate", "bursts of %d writes need their writes a second", r.BurstSize)
	case r.BurstSize < 2 || r.BurstSize > MaxBurst:
		return Fieldf("rate", "a burst of %d writes: 2 to %d", r.BurstSize, MaxBurst)
	case !r.PerDirection() || r.WriteIOPS == 0:
		return Fieldf("rate", "write bursts need a write rate of their own (wiops)")
	case r.BurstIOPS > r.WriteIOPS*(1+1e-9):
		return Fieldf("rate", "%s writes a second in bursts, more than the %s writes a second", results.FormatRate(r.BurstIOPS), results.FormatRate(r.WriteIOPS))
	}
	return nil
}

// readShare is the read percentage of a rate per direction, rounded: the
// pattern's ReadPct for such a rate; -1 for a total rate.
func readShare(r results.Rate) int {
	if !r.PerDirection() {
		return -1
	}
	pct := int(math.Round(100 * r.ReadIOPS / (r.ReadIOPS + r.WriteIOPS)))
	switch {
	case pct == 100 && r.WriteIOPS > 0:
		return 99
	case pct == 0 && r.ReadIOPS > 0:
		return 1
	}
	return pct
}

// RateSpec is a rate as a user writes it: IOPS (5000), a rate per
// direction (riops=3000,wiops=1000, either may be left out), or a share of
// the pattern's own closed-loop maximum (80%), which is measured first.
type RateSpec struct {
	Rate results.Rate
	// SharePct is the share of the closed-loop maximum in percent, as
	// written, in (0, 100]; 0 when Rate is set.
	SharePct float64
}

// ParseRate reads a RateSpec; errors are FieldErrors of "rate".
func ParseRate(spec string) (RateSpec, error) {
	s := strings.TrimSpace(spec)
	bad := func(msg string) (RateSpec, error) {
		return RateSpec{}, Fieldf("rate", "%q: %s (e.g. 5000, riops=3000,wiops=1000, riops=700,wiops=270,wburst=98,wburst-iops=196 or 80%%)", spec, msg)
	}
	if s == "" {
		return bad("empty")
	}
	if strings.HasSuffix(s, "%") {
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return bad("a share of the closed-loop maximum must lie in (0, 100] %")
		}
		return RateSpec{SharePct: v}, nil
	}
	number := func(t string) (float64, bool) {
		v, err := strconv.ParseFloat(t, 64)
		return v, err == nil && v > 0 && v <= MaxRate
	}
	if !strings.Contains(s, "=") {
		v, ok := number(s)
		if !ok {
			return bad(fmt.Sprintf("not a rate in IOPS from 0 to %s", results.FormatRate(MaxRate)))
		}
		return RateSpec{Rate: results.Rate{IOPS: v}}, nil
	}
	var r results.Rate
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		n, ok := number(strings.TrimSpace(v))
		if !ok {
			return bad(fmt.Sprintf("%s: not a rate in IOPS from 0 to %s", k, results.FormatRate(MaxRate)))
		}
		switch strings.TrimSpace(k) {
		case "riops":
			if r.ReadIOPS != 0 {
				return bad("riops given twice")
			}
			r.ReadIOPS = n
		case "wiops":
			if r.WriteIOPS != 0 {
				return bad("wiops given twice")
			}
			r.WriteIOPS = n
		case "wburst":
			if r.BurstSize != 0 {
				return bad("wburst given twice")
			}
			if n != math.Trunc(n) || n < 2 || n > MaxBurst {
				return bad(fmt.Sprintf("wburst: not a count of writes per burst from 2 to %d", MaxBurst))
			}
			r.BurstSize = int(n)
		case "wburst-iops":
			if r.BurstIOPS != 0 {
				return bad("wburst-iops given twice")
			}
			r.BurstIOPS = n
		default:
			return bad(fmt.Sprintf("%q is not riops, wiops, wburst or wburst-iops", k))
		}
	}
	switch {
	case r.BurstIOPS > 0 && r.BurstSize == 0:
		return bad("wburst-iops needs wburst, the writes per burst")
	case r.BurstSize > 0 && r.WriteIOPS == 0:
		return bad("wburst needs wiops, the writes a second that its bursts are among")
	case r.BurstSize > 0 && r.BurstIOPS == 0:
		r.BurstIOPS = r.WriteIOPS // every write in bursts
	case r.BurstIOPS > r.WriteIOPS:
		return bad("wburst-iops is more than wiops")
	}
	return RateSpec{Rate: r}, nil
}
