package results

import (
	"encoding/json"
	"fmt"
	"os"
)

// KindBurst is the "kind" of the document `iomatrix burst` writes.
const KindBurst = "burst"

// Burst is `iomatrix burst`'s answer as one document: where a volume's
// rate stepped down and stayed down under one pattern, what it did
// before and after, and what its bucket holds and earns back. Decided by
// answers/burst; its field names are a contract (docs/cloud-volumes.md):
// add fields, never rename.
type Burst struct {
	SchemaVersion int        `json:"schema_version"`
	Tool          Tool       `json:"tool"`
	Kind          string     `json:"kind"` // KindBurst
	Host          Host       `json:"host"`
	Target        TargetInfo `json:"target"`
	Settings      Settings   `json:"settings"`
	StartedAt     string     `json:"started_at"`
	FinishedAt    string     `json:"finished_at,omitempty"`
	Pattern       Pattern    `json:"pattern"`
	// Rule is the change-point test the step passed (docs/cloud-volumes.md).
	Rule BurstRule `json:"rule"`
	// MaxRuntimeNS bounds the run that looks for the step.
	MaxRuntimeNS int64 `json:"max_runtime_ns"`
	// Verdict is "step" (a lasting step down was found: the figures below
	// hold), "steady" (none within the maximum runtime: the volume held
	// its rate, or changed it by less than the rule asks) or "incomplete"
	// (interrupted or stopped by an I/O error before either).
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	// BytesPerIO turns the per-second IOPS into bytes a second: the
	// run's bytes over its I/Os.
	BytesPerIO float64 `json:"bytes_per_io"`
	// RatesIOPS is the run's rate, second by second from its start; the
	// step, when found, lies before RatesIOPS[StepAt].
	RatesIOPS []float64  `json:"rates_iops"`
	Step      *BurstStep `json:"step,omitempty"`
	// Probe tells an IOPS bucket from a bandwidth bucket (see BurstProbe).
	Probe *BurstProbe `json:"probe,omitempty"`
	// Refill is the idle probe's (--refill) finding.
	Refill *BurstRefill `json:"refill,omitempty"`
	// Results are the runs behind the figures: the run that found the
	// step, the probe and the refill's run, in that order, as a results
	// file holds them.
	Results []Result `json:"results"`
}

// BurstRule is the change-point test (answers/burst.StepRule).
type BurstRule struct {
	MinDropPct float64 `json:"min_drop_pct"`
	Sigmas     float64 `json:"sigmas"`
	MinBefore  int     `json:"min_before"`
	MinAfter   int     `json:"min_after"`
}

// BurstStep is a found step and what it tells of the volume.
type BurstStep struct {
	StepAt int `json:"step_at"` // index of the first second after the step
	// Sigmas is the drop over its standard error (the rule's test).
	Sigmas float64 `json:"sigmas"`
	// BurstIOPS and BaselineIOPS are the rates before and after the step,
	// each the mean of its side's whole seconds but the one the step fell
	// in; BurstBPS and BaselineBPS the same in bytes a second.
	BurstIOPS    float64 `json:"burst_iops"`
	BaselineIOPS float64 `json:"baseline_iops"`
	BurstBPS     float64 `json:"burst_bps"`
	BaselineBPS  float64 `json:"baseline_bps"`
	// DurationNS is how long the burst lasted from the run's start: the
	// whole seconds before the step and the share of the seconds around it
	// that ran at the burst rate.
	DurationNS int64 `json:"duration_ns"`
	// BucketIOs and BucketBytes are what the volume delivered above its
	// baseline until the step: the bucket the burst spent.
	BucketIOs   float64 `json:"bucket_ios"`
	BucketBytes float64 `json:"bucket_bytes"`
	// BurstIOs and BurstBytes are all it delivered until the step, the
	// baseline's share included: a fast cache's size as written.
	BurstIOs   float64 `json:"burst_ios"`
	BurstBytes float64 `json:"burst_bytes"`
}

// The kinds of bucket a probe tells apart (BurstProbe.Bucket).
const (
	BucketIOPS         = "iops"         // the baseline held its IOPS at another block size
	BucketBandwidth    = "bandwidth"    // it held its bytes a second
	BucketUndetermined = "undetermined" // it held neither: the device's own speed, or both limits
)

// BurstProbe is a short run after the step at another block size: a
// volume limited in I/Os keeps its IOPS there, one limited in bytes keeps
// its bytes a second.
type BurstProbe struct {
	Pattern  Pattern `json:"pattern"`
	IOPS     float64 `json:"iops"`
	BPS      float64 `json:"bps"`
	IOPSPct  float64 `json:"iops_pct"` // of the baseline's IOPS
	BPSPct   float64 `json:"bps_pct"`  // of the baseline's bytes a second
	Bucket   string  `json:"bucket"`   // BucketIOPS, BucketBandwidth or BucketUndetermined
	Reason   string  `json:"reason"`
	Skipped  string  `json:"skipped,omitempty"` // why no probe ran (then the fields above are empty)
	RangePct float64 `json:"range_pct"`         // how close to the baseline's figure "held" is
}

// BurstRefill is the idle probe: the volume left idle for IdleNS after
// the step, then run again until it stepped down again. What it
// delivered above the baseline before that second step is what it earned
// back while idle.
type BurstRefill struct {
	IdleNS    int64     `json:"idle_ns"`
	RatesIOPS []float64 `json:"rates_iops"`
	// Found is false when the second run never stepped down within the
	// maximum runtime (then the figures below are empty).
	Found       bool    `json:"found"`
	StepAt      int     `json:"step_at,omitempty"`
	BucketIOs   float64 `json:"bucket_ios"`
	BucketBytes float64 `json:"bucket_bytes"`
	// IOPS and BPS are the refill rate: the bucket over the idle time.
	IOPS float64 `json:"iops"`
	BPS  float64 `json:"bps"`
	// Full says the bucket was earned back whole (within a twentieth):
	// the refill rate is then a lower bound, the idle time longer than
	// the refill took.
	Full bool `json:"full,omitempty"`
}

// WriteBurstFile replaces path with the burst document (see
// WriteBytesAtomic).
func WriteBurstFile(path string, d *Burst) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode burst: %w", err)
	}
	if err := WriteBytesAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write burst: %w", err)
	}
	return nil
}

// SentinelBurst is the burst a sweep's sentinels were told of (sweep
// --burst): a sentinel run above the burst's baseline by the change test
// is bursting (LevelBursting), and the cells beside it are marked
// Bursting rather than held to a reference.
type SentinelBurst struct {
	File         string  `json:"file"`
	BurstIOPS    float64 `json:"burst_iops"`
	BaselineIOPS float64 `json:"baseline_iops"`
}

// LevelBursting is a sentinel run above the told burst's baseline
// (SentinelRun.Level).
const LevelBursting = "bursting"

// BurstingMark says which sentinel runs a bursting cell lies between,
// and their rates against the burst's baseline.
type BurstingMark struct {
	SentinelBefore int        `json:"sentinel_before"`
	SentinelAfter  int        `json:"sentinel_after"`
	SentinelIOPS   [2]float64 `json:"sentinel_iops"`
	BaselineIOPS   float64    `json:"baseline_iops"`
}

// ReadBurstFile reads a burst document (iomatrix burst --out); another
// document or a file that is not one is refused with what it is.
func ReadBurstFile(path string) (*Burst, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kind, err := DocumentKind(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if kind != KindBurst {
		return nil, fmt.Errorf("%s: %w: not a burst measurement (iomatrix burst)", path, ErrBadDocument)
	}
	var d Burst
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrBadDocument, err)
	}
	return &d, nil
}
