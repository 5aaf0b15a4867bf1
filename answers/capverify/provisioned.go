package capverify

import (
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// ProvisionedWindowRule says in a sentence how a cell is measured against
// a volume's provisioned limits.
const ProvisionedWindowRule = "each cell is measured as asked, its ramp then its runtime, with no wait before it: " +
	"a volume's provisioned limits are its provider's, with no throttle slices to align a window to and no carry-over"

// ProvisionedJudge is the check cap verify applies to each result
// measured against a volume's provisioned limits, recorded as doc's cap:
// the cell judged (Check, with no baseline: a volume has no figure
// without its limits), then the depth rule (JudgeDepths) applied to it
// and to the cells of doc measured before it, whose judgements it may
// change.
func ProvisionedJudge(sys sysfs.FS, doc *results.Document, tolerancePct float64) func(*results.Result) {
	judge := CellJudge(sys, doc.Cap, tolerancePct, nil)
	return func(res *results.Result) {
		judge(res)
		n := len(doc.Results)
		// Each result's CapCheck is a pointer: the judgements change in
		// place, and doc is saved with them.
		JudgeDepths(append(doc.Results[:n:n], *res))
	}
}

// JudgeDepths applies the depth rule to cells judged against a volume's
// provisioned limits. At a shallow queue a volume's latency, not its
// limits, sets the rate (at QD1 and 1 ms an I/O, 1,000 IOPS, whatever
// the volume is sold with), and no uncapped figure tells how far the
// cell could go: a cell short of the limits whose rate alone failed is
// held, not binding, when a cell of the same pattern at a deeper queue
// (more I/Os in flight: queue depth times jobs) reached them, at or above
// the limits less the tolerance, and was judged: the volume delivers its
// limits, at a depth where they bind. A cell with no deeper one that
// reached them still fails: the volume did less than its limits at every
// depth measured.
func JudgeDepths(cells []results.Result) {
	for i := range cells {
		short := cells[i].CapCheck
		if !shortOfLimits(short) || cells[i].Error != nil {
			continue
		}
		for j := range cells {
			if reachedLimits(cells[j].CapCheck) && deeper(cells[j].Pattern, cells[i].Pattern) {
				short.OK, short.RateOK, short.Binding = true, true, false
				short.DeeperReached, short.Reasons = cells[j].Name, nil
				break
			}
		}
	}
}

// shortOfLimits: k failed on its rate alone, below the limits.
func shortOfLimits(k *results.CapCheck) bool {
	return k != nil && !k.OK && !k.Inconclusive && !k.Above && !k.RateOK && k.Binding && k.CountersOK && k.DeviationPct < 0
}

// reachedLimits: k did at least the limits less the tolerance, and was
// judged so.
func reachedLimits(k *results.CapCheck) bool {
	return k != nil && !k.Inconclusive && k.Binding && (k.Above || k.RateOK)
}

// deeper tells whether p is q at a deeper queue: the same pattern but for
// its depth and jobs, with more I/Os in flight.
func deeper(p, q results.Pattern) bool {
	inFlight := func(p results.Pattern) int { return p.QueueDepth * max(p.Jobs, 1) }
	if inFlight(p) <= inFlight(q) {
		return false
	}
	p.QueueDepth, p.Jobs, q.QueueDepth, q.Jobs = 0, 0, 0, 0
	return p == q
}
