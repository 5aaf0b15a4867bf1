package capverify

import (
	"fmt"
	"strings"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// WindowRule says in a sentence how a capped cell is measured.
var WindowRule = fmt.Sprintf("each cell starts after the cgroup was quiet for %s (a fresh throttle slice); "+
	"its ramp, at least %s, ends mid-slice and its runtime is whole %s slices: the throttle's start-up burst is not judged",
	cgroup.ThrottleQuiet, cgroup.MinCappedRamp, cgroup.ThrottleSlice)

// VerdictRun is what a verdict needs besides the results: where they are,
// the tolerance they were judged by, and whether every pattern was
// measured.
type VerdictRun struct {
	ResultsFile, BaselineFile string
	TolerancePct              float64
	Complete                  bool
}

// Verdict gathers the judged results of doc (each result's CapCheck)
// into the whole document's verdict: ok, fail, inconclusive or
// incomplete.
func Verdict(doc *results.Document, run VerdictRun) *results.CapVerdict {
	v := &results.CapVerdict{
		ResultsFile: run.ResultsFile, BaselineFile: run.BaselineFile,
		Tool: doc.Tool, Host: doc.Host, Target: doc.Target, Cap: doc.Cap,
		Settings: results.CapVerdictSettings{Settings: doc.Settings, TolerancePct: run.TolerancePct,
			CounterTolerancePct: 100 * CounterTolerance, Window: WindowRule},
		Cells: []results.CapVerdictCell{},
	}
	complete := run.Complete
	for _, r := range doc.Results {
		k := r.CapCheck
		if k == nil {
			continue
		}
		v.Cells = append(v.Cells, results.CapVerdictCell{Name: r.Name, Pattern: r.Pattern, MeasuredIOPS: r.Total.IOPS,
			IOs: r.Completed, KernelRequests: r.CgroupIOs, Error: r.Error, Stop: r.Stop, Rounds: r.Rounds, CIPct: r.CIPct, CapCheck: *k})
		switch {
		case k.OK:
			v.Passed++
		case k.Inconclusive:
			v.Inconclusive++
		default:
			v.Failed++
		}
	}
	n := len(v.Cells)
	notJudged, quiet := notJudged(v)
	switch {
	case v.Failed > 0:
		v.Verdict = "fail"
		v.Summary = fmt.Sprintf("the cap does not hold in %d of %s", v.Failed, units.Count(n, "cell"))
		if !complete {
			v.Summary += " measured before the run stopped"
		}
		v.Summary += notJudged
	case !complete:
		v.Verdict = "incomplete"
		v.Summary = fmt.Sprintf("interrupted: the cap holds in the %s measured", units.Count(n, "cell"))
		if v.Inconclusive > 0 {
			v.Summary = fmt.Sprintf("interrupted: the cap holds in %d of the %s measured", v.Passed, units.Count(n, "cell")) + notJudged
		}
	case v.Inconclusive > 0:
		v.Verdict = "inconclusive"
		v.Summary = fmt.Sprintf("the cap holds in %d of %s", v.Passed, units.Count(n, "cell")) + notJudged +
			" while they were measured (run again " + quiet + ")"
	default:
		v.Verdict = "ok"
		v.Summary = "the cap holds in " + units.Count(n, "cell")
		if n > 1 {
			v.Summary = "the cap holds in all " + units.Count(n, "cell")
		}
	}
	return v
}

// notJudged says why v's inconclusive cells were not judged, as the
// clause a summary ends with ("" when none was), and what to run them
// again on.
func notJudged(v *results.CapVerdict) (clause, again string) {
	if v.Inconclusive == 0 {
		return "", ""
	}
	var load, cpu bool
	for _, c := range v.Cells {
		// A cell of a version before Starved was not judged for the
		// device's other load.
		load = load || c.Inconclusive && (c.OtherLoad || !c.Starved)
		cpu = cpu || c.Inconclusive && c.Starved
	}
	var why, where []string
	if load {
		why, where = append(why, "another process loaded the device"), append(where, "a quiet device")
	}
	if cpu {
		why, where = append(why, "the run waited for a CPU long enough to explain the shortfall"), append(where, "idle CPUs")
	}
	return fmt.Sprintf("; %d could not be judged: %s", v.Inconclusive, strings.Join(why, ", and ")), "on " + strings.Join(where, " with ")
}
