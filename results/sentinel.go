package results

// Sentinels are a sweep's watch over its device (docs/sweeps.md,
// "Sentinels"): a short run of one reference pattern at the start of each
// session, at intervals between cells and at the end. A run whose rate
// moved from the first one's beyond its own precision marks the cells
// measured around it (Result.DeviceChanged). The runs are never cells of
// the matrix: their pattern may be a cell's too, and its cell stays the
// one measured in its turn.
type Sentinels struct {
	Pattern   Pattern `json:"pattern"`
	RuntimeNS int64   `json:"runtime_ns"`
	RampNS    int64   `json:"ramp_ns"`
	// EveryNS is the least time between the end of a run and the start
	// of the next, cells in between; OnDrift what the sweep did on a
	// change (DriftMark, DriftRerun, DriftStop). Both are the last
	// session's: a resumed sweep may change them.
	EveryNS int64  `json:"every_ns"`
	OnDrift string `json:"on_drift"`
	// FloorPct and Sigmas are the change test's (session.DriftRule): a
	// change is at least FloorPct of the reference's rate and Sigmas
	// standard errors of the difference.
	FloorPct float64 `json:"floor_pct"`
	Sigmas   float64 `json:"sigmas"`
	// Runs are the sentinel's results in the order they ran, each judged
	// against the first that measured a rate (the reference).
	Runs []SentinelRun `json:"runs"`
	// Changes are the moves of the device's rate the runs show, in order.
	Changes []DeviceShift `json:"changes,omitempty"`
	// Burst, when set, is the volume's burst the sweep was told of: runs
	// above its baseline are bursting, not changes.
	Burst *SentinelBurst `json:"burst,omitempty"`
	// Replaced are the first measurements of cells measured again after
	// a change (--on-drift rerun); the cells in Results are the new ones.
	Replaced []Result `json:"replaced,omitempty"`
}

// MinSentinelRounds is the fewest whole rounds a sentinel run needs to be
// judged: two to show any scatter, and a third so that its scatter rests
// on more than one difference.
const MinSentinelRounds = 3

// What a sweep does when its sentinels find a change (Sentinels.OnDrift).
const (
	DriftMark  = "mark"  // mark the cells and go on
	DriftRerun = "rerun" // mark, and measure again the cells it cannot place once the device is steady
	DriftStop  = "stop"  // mark, save and stop: the sweep is resumable
)

// DriftActions are the values of OnDrift.
var DriftActions = []string{DriftMark, DriftRerun, DriftStop}

// The level of a sentinel run against the reference (SentinelRun.Level).
const (
	LevelReference = "reference" // the first run that measured a rate
	LevelSame      = "same"      // no change from the reference
	LevelChanged   = "changed"   // a change from the reference
	LevelUnknown   = "unknown"   // cannot be judged: no rate, or no scatter to judge it by
)

// SentinelRun is one run of the sentinel and its judgement.
type SentinelRun struct {
	Result
	Level string `json:"level"`
	// ChangePct is the run's rate against the reference's, in %
	// (-50: half); ThresholdPct the least change the test would call
	// one: the floor, or more where the runs' own scatter is wider.
	ChangePct    float64 `json:"change_pct"`
	ThresholdPct float64 `json:"threshold_pct"`
	// Moved says the run differs from the run before it by the same
	// test: the device moved between them (absent for the first).
	Moved bool `json:"moved,omitempty"`
	// Unjudged says why a run's level is unknown.
	Unjudged string `json:"unjudged,omitempty"`
}

// DeviceShift is a move of the device's rate between two sentinel runs:
// away from the reference's, back to it, or from one changed rate to
// another. It happened after the earlier run's window began and before
// the later run's ended.
type DeviceShift struct {
	FromRun int `json:"from_run"` // index in Sentinels.Runs
	ToRun   int `json:"to_run"`
	// After and Before bound the time of the move (RFC 3339): the
	// earlier run's window start and the later run's window end.
	After  string `json:"after"`
	Before string `json:"before"`
	// FromIOPS and ToIOPS are the two runs' rates, ChangePct the second
	// against the first.
	FromIOPS  float64 `json:"from_iops"`
	ToIOPS    float64 `json:"to_iops"`
	ChangePct float64 `json:"change_pct"`
	// Back: the later run is at the reference's rate again.
	Back bool `json:"back,omitempty"`
}

// DeviceChange marks a cell measured while the device was not the one
// the sweep's reference sentinel measured, or in the interval in which
// it moved: its figure is not of the same device as the unmarked cells.
type DeviceChange struct {
	// SentinelBefore and SentinelAfter are the sentinel runs (indexes in
	// Sentinels.Runs) measured just before and just after the cell, and
	// SentinelIOPS their rates; ReferenceIOPS is the reference's.
	SentinelBefore int        `json:"sentinel_before"`
	SentinelAfter  int        `json:"sentinel_after"`
	SentinelIOPS   [2]float64 `json:"sentinel_iops"`
	ReferenceIOPS  float64    `json:"reference_iops"`
	// InShift: the device moved between those two runs, so the cell may
	// have been measured before the move; without it, both runs found
	// the device changed and the cell was measured on the changed one.
	InShift bool `json:"in_shift,omitempty"`
}
