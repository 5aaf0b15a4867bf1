package session

import (
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// A sweep told its volume's burst (1,500 IOPS, then a 150 baseline):
// the runs at the burst's rate are bursting, the cells beside them are
// marked bursting and none device_changed, the first run at the baseline
// is the reference, and a later halving of the baseline is still a
// change.
func TestJudgeDriftBurst(t *testing.T) {
	flat := func(at, v float64) results.SentinelRun {
		return results.SentinelRun{Result: sentinelResult(at, v, v, v)}
	}
	doc := &results.Document{Sentinels: &results.Sentinels{
		Burst: &results.SentinelBurst{BurstIOPS: 1500, BaselineIOPS: 150},
		Runs:  []results.SentinelRun{flat(0, 1500), flat(20, 1500), flat(40, 150), flat(60, 150), flat(80, 75), flat(100, 75)},
	}}
	for _, at := range []float64{5, 10, 25, 30, 45, 50, 65, 85, 90} {
		doc.Results = append(doc.Results, cellAt("c", at))
	}
	JudgeDrift(doc, DefaultDriftRule)
	var levels []string
	for _, r := range doc.Sentinels.Runs {
		levels = append(levels, r.Level)
	}
	want := []string{results.LevelBursting, results.LevelBursting, results.LevelReference, results.LevelSame, results.LevelChanged, results.LevelChanged}
	for i := range want {
		if levels[i] != want[i] {
			t.Fatalf("levels %v, want %v", levels, want)
		}
	}
	for i, r := range doc.Results {
		burst := i < 4 // between runs 0-1 and 1-2: one of each pair bursting
		if (r.Bursting != nil) != burst {
			t.Errorf("cell at %s: bursting %+v, want %v", r.StartedAt, r.Bursting, burst)
		}
		changed := i >= 6 // between 3-4 (in the shift) and 4-5
		if (r.DeviceChanged != nil) != changed {
			t.Errorf("cell at %s: device_changed %+v, want %v", r.StartedAt, r.DeviceChanged, changed)
		}
	}
	// Untold, the same runs are a reference at the burst's rate and
	// every later cell changed from it.
	doc.Sentinels.Burst = nil
	JudgeDrift(doc, DefaultDriftRule)
	for i, r := range doc.Results {
		if r.Bursting != nil || (r.DeviceChanged != nil) != (i >= 2) {
			t.Errorf("untold, cell at %s: bursting %+v, device_changed %+v", r.StartedAt, r.Bursting, r.DeviceChanged)
		}
	}
}
