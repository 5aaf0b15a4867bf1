package fit

import (
	"errors"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// Cells measured during a burst are left out, and the verdict says so;
// with only those, there is nothing to judge on.
func TestJudgeLeavesBurstOut(t *testing.T) {
	cell := func(qd int, iops float64, bursting bool) results.Result {
		r := results.Result{Name: "c", Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: qd, Jobs: 1},
			Total: results.Total{IOs: 1000, IOPS: iops}}
		if bursting {
			r.Bursting = &results.BurstingMark{BaselineIOPS: 150}
		}
		return r
	}
	need := Need{ReadIOPS: 1000, BlockSize: 4096}
	v, err := Judge(&results.Document{Results: []results.Result{cell(32, 1500, true), cell(32, 150, false)}}, need)
	if err != nil {
		t.Fatal(err)
	}
	if v.Fits || v.IOPS != 150 || len(v.Notes) == 0 || !strings.Contains(strings.Join(v.Notes, "\n"), "baseline figures") {
		t.Errorf("fits %v on %g IOPS, notes %q; want the baseline's 150, not fitting, said", v.Fits, v.IOPS, v.Notes)
	}
	_, err = Judge(&results.Document{Results: []results.Result{cell(32, 1500, true)}}, need)
	if !errors.Is(err, ErrCannotJudge) || !strings.Contains(err.Error(), "burst") {
		t.Errorf("only a bursting cell: %v; want it cannot judge, saying why", err)
	}
}
