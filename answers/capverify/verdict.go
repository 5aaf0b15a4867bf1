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
// into the whole document's verdict: ok, fail, above (a volume's
// provisioned limits only), inconclusive or incomplete, in that order of
// precedence but for incomplete, which a failure outranks.
//
// Above is its own verdict: a volume that does more than the limits it
// is sold with keeps its promise so far, so it does not fail, but its
// limits were not seen to hold, so it is not ok either. It is spending a
// burst's credits, or it is not limited where its catalogue says: the
// figures are not the ones it will keep. The command line gives it the
// exit status of a check that could not be judged.
func Verdict(doc *results.Document, run VerdictRun) *results.CapVerdict {
	provisioned := doc.Cap != nil && doc.Cap.Provisioned
	window, counterTol := WindowRule, 100*CounterTolerance
	if provisioned {
		window, counterTol = ProvisionedWindowRule, 0
	}
	v := &results.CapVerdict{
		ResultsFile: run.ResultsFile, BaselineFile: run.BaselineFile,
		Tool: doc.Tool, Host: doc.Host, Target: doc.Target, Cap: doc.Cap,
		Settings: results.CapVerdictSettings{Settings: doc.Settings, TolerancePct: run.TolerancePct,
			CounterTolerancePct: counterTol, Window: window},
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
		case k.Above:
			v.Above++
		default:
			v.Failed++
		}
	}
	n := len(v.Cells)
	notJudged, quiet := notJudged(v)
	w := capWords
	if provisioned {
		w = provisionedWords
	}
	above := ""
	if v.Above > 0 {
		above = fmt.Sprintf("; %d did more than the limits: bursting or uncapped", v.Above)
	}
	switch {
	case v.Failed > 0:
		v.Verdict = "fail"
		v.Summary = fmt.Sprintf("%s in %d of %s", w.fails, v.Failed, units.Count(n, "cell"))
		if !complete {
			v.Summary += " measured before the run stopped"
		}
		v.Summary += notJudged + above
	case !complete:
		v.Verdict = "incomplete"
		v.Summary = fmt.Sprintf("interrupted: %s in the %s measured", w.holds, units.Count(n, "cell"))
		if v.Inconclusive > 0 || v.Above > 0 {
			v.Summary = fmt.Sprintf("interrupted: %s in %d of the %s measured", w.holds, v.Passed, units.Count(n, "cell")) + notJudged + above
		}
	case v.Above > 0:
		v.Verdict = "above"
		v.Summary = fmt.Sprintf("the volume did more than its provisioned limits in %d of %s: bursting or uncapped "+
			"(spending a burst's credits, or not limited there), so that its limits could not be judged: "+
			"measure it again once a burst is spent (iomatrix burst finds how long one lasts)", v.Above, units.Count(n, "cell")) + notJudged
	case v.Inconclusive > 0:
		v.Verdict = "inconclusive"
		v.Summary = fmt.Sprintf("%s in %d of %s", w.holds, v.Passed, units.Count(n, "cell")) + notJudged +
			" while they were measured (run again " + quiet + ")"
	default:
		v.Verdict = "ok"
		v.Summary = w.holds + " in " + units.Count(n, "cell")
		if n > 1 {
			v.Summary = w.holds + " in all " + units.Count(n, "cell")
		}
	}
	return v
}

// verdictWords are how a summary says that the limits hold, or not.
type verdictWords struct{ holds, fails string }

var (
	capWords         = verdictWords{"the cap holds", "the cap does not hold"}
	provisionedWords = verdictWords{"the volume holds at its provisioned limits", "the volume does less than its provisioned limits"}
)

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
