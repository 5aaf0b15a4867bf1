package results

// Rehearsal is a workload's systems run at once, each as an open-loop
// stream at its own rate, and the verdict on each from what it measured:
// its rate kept, and its latency bounds held by its response time. The
// document's results hold one result per system, named by the system.
type Rehearsal struct {
	// Workload is the workload file; Lookup the results file whose
	// cells the lookup's verdict (LookupFits) and the caps came from.
	Workload   string `json:"workload"`
	Lookup     string `json:"lookup"`
	LookupFits bool   `json:"lookup_fits"`
	// LookupWhy says why the lookup's verdict is no, when it is.
	LookupWhy string `json:"lookup_why,omitempty"`
	// WithCaps: each system ran in a cgroup of its own under its share
	// of the lookup's cell (RehearsedSystem.Cap).
	WithCaps bool `json:"with_caps"`
	// Fits is the rehearsal's verdict: every system fits.
	Fits bool `json:"fits"`
	// Inconclusive: it does not fit only by systems whose run waited for
	// a CPU long enough to explain it (RehearsedSystem.Inconclusive):
	// neither FITS nor not.
	Inconclusive bool              `json:"inconclusive,omitempty"`
	Systems      []RehearsedSystem `json:"systems"`
}

// RehearsedSystem is one system of a rehearsal: what it needs, what it
// got, and the verdict.
type RehearsedSystem struct {
	Name string `json:"name"`
	// Result names the system's result in the document.
	Result      string  `json:"result"`
	ReadIOPS    float64 `json:"read_iops"`
	WriteIOPS   float64 `json:"write_iops"`
	BlockSize   int64   `json:"block_size"`
	Concurrency int     `json:"concurrency,omitempty"`
	// Cap is the cgroup the system ran in, when the rehearsal ran under
	// caps.
	Cap *Cap `json:"cap,omitempty"`
	// AchievedIOPS and ScheduledIOPS are the result's (RateStats);
	// DeviationPct is the first's deviation from the second in %.
	AchievedIOPS  float64 `json:"achieved_iops"`
	ScheduledIOPS float64 `json:"scheduled_iops"`
	DeviationPct  float64 `json:"deviation_pct"`
	// Sustained: the stream kept to its schedule (RateStats.Sustained).
	Sustained bool `json:"sustained"`
	// Latency is each of the system's bounds against its response time.
	Latency []RehearsedBound `json:"latency,omitempty"`
	// ResponseP99US is the system's p99 response time in µs, bound or
	// not: the figure a reader looks for first.
	ResponseP99US float64 `json:"response_p99_us"`
	Fits          bool    `json:"fits"`
	// Inconclusive: the system does not fit, but its I/O waited for a
	// CPU, while others held them, for CPUWaitPct of the window (the
	// result's CPUWait), long enough to explain its shortfall and its
	// response time, and the lookup's cells fit: a busy machine, not the
	// volume, may have held it back. Neither fits nor not.
	Inconclusive bool    `json:"inconclusive,omitempty"`
	CPUWaitPct   float64 `json:"cpu_wait_pct,omitempty"`
	// Why says what does not hold, when the system does not fit.
	Why string `json:"why,omitempty"`
	// Replayed is the observed shape the system replayed (a version 2
	// workload file); nil for flat rates.
	Replayed *ReplayedShape `json:"replayed,omitempty"`
}

// ReplayedShape is what a rehearsal replayed of a system's observed
// shape: each part absent when the workload file did not give it.
type ReplayedShape struct {
	// Timeline names the observation and series replayed: Steps of
	// StepNS each (the observed step divided by Speed), the observed
	// moments FromMS to ToMS since the observation's start, at mean
	// rates MeanReadIOPS and MeanWriteIOPS (the headroom added);
	// MissingSteps of them had no reading and replayed the step
	// before's rate.
	Timeline      string  `json:"timeline,omitempty"`
	Steps         int     `json:"steps,omitempty"`
	StepNS        int64   `json:"step_ns,omitempty"`
	Speed         float64 `json:"speed,omitempty"`
	FromMS        int64   `json:"from_ms,omitempty"`
	ToMS          int64   `json:"to_ms,omitempty"`
	MissingSteps  int     `json:"missing_steps,omitempty"`
	MeanReadIOPS  float64 `json:"mean_read_iops,omitempty"`
	MeanWriteIOPS float64 `json:"mean_write_iops,omitempty"`
	// BSSplit is the block-size mix, Sync the durable writes' form.
	BSSplit string `json:"bssplit,omitempty"`
	Sync    string `json:"sync,omitempty"`
	// FlushIOPS is how many of the workload's writes a second were
	// replayed as the syncs' cache flushes, not as data writes (0: none,
	// the writes replayed whole).
	FlushIOPS float64 `json:"flush_iops,omitempty"`
	// BurstIOPS of the data writes a second were replayed in bursts of
	// BurstSize writes at one moment (0: none).
	BurstIOPS float64 `json:"burst_iops,omitempty"`
	BurstSize int     `json:"burst_size,omitempty"`
}

// RehearsedBound is one latency bound against the response time.
type RehearsedBound struct {
	Bound string  `json:"bound"`
	US    float64 `json:"us"`
	Holds bool    `json:"holds"`
}
