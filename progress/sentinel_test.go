package progress

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// Without a terminal, each sentinel run is a line of its own, a move of
// the device one more, and the cells measured while the device is
// changed say so on their lines; the runs are not counted as patterns.
func TestSweepSentinelLines(t *testing.T) {
	var b bytes.Buffer
	prog := NewSweep(&b, false, 2, 0, iotest.Options{})
	sentinel := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1}
	run := func(iops float64, level string, pct float64) results.SentinelRun {
		return results.SentinelRun{Result: results.Result{Name: sentinel.Name(), Total: results.Total{IOPS: iops}}, Level: level, ChangePct: pct, ThresholdPct: 20}
	}
	doc := &results.Document{Sentinels: &results.Sentinels{Pattern: sentinel, Runs: []results.SentinelRun{run(2000, results.LevelReference, 0)}}}
	cell := results.Result{Name: "rand-4k-r0-qd1", Total: results.Total{IOs: 1000, IOPS: 1000}}
	prog.SentinelStart(sentinel)
	prog.SentinelDone(doc, 0)
	prog.Start(cell.Pattern)
	prog.Finished(cell)
	doc.Sentinels.Runs = append(doc.Sentinels.Runs, run(1000, results.LevelChanged, -50))
	doc.Sentinels.Changes = []results.DeviceShift{{FromRun: 0, ToRun: 1, After: "2026-12-04T10:00:00Z", Before: "2026-12-04T10:00:09Z",
		FromIOPS: 2000, ToIOPS: 1000, ChangePct: -50}}
	prog.SentinelStart(sentinel)
	prog.SentinelDone(doc, 1)
	prog.Start(cell.Pattern)
	prog.Finished(cell)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"sentinel 1 (rand-4k-r100-qd32): 2,000 IOPS, the reference the later runs are held to",
		"[1/2] rand-4k-r0-qd1: 1,000 IOPS,",
		"sentinel 2 (rand-4k-r100-qd32): 1,000 IOPS, -50.0 % from the reference (a change is 20.0 % or more): DEVICE CHANGED",
		"Device changed between 2026-12-04 10:00:00Z and 2026-12-04 10:00:09Z: the sentinel rand-4k-r100-qd32 went from 2,000 to 1,000 IOPS (-50.0 %)",
		"[2/2] rand-4k-r0-qd1: 1,000! IOPS,",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[4], "on the changed device") || strings.Contains(lines[1], "changed") {
		t.Errorf("cell lines: %q, %q", lines[1], lines[4])
	}
}
