package results

// CapVerdict is cap verify's answer as one document: what `cap verify
// --format json` prints and a CI job reads, decided by capverify.Verdict
// from the judged cells. Its field names are a contract (docs/caps.md,
// "cap verify --format json"): add fields, never rename.
type CapVerdict struct {
	// Verdict is "ok" (every cell holds), "fail" (a cell does not),
	// "above" (none fails, but some did more than a volume's provisioned
	// limits: it is bursting or not limited there, so that the limits
	// could not be judged), "inconclusive" (none fails, but another
	// process loaded the device while some were measured, or their wait
	// for a CPU could explain their rate, so that it could not be judged)
	// or "incomplete" (interrupted or stopped by an I/O error before every
	// pattern was measured; the cells measured so far are listed).
	Verdict      string             `json:"verdict"`
	Summary      string             `json:"summary"`
	ResultsFile  string             `json:"results_file"`
	BaselineFile string             `json:"baseline_file"`
	Tool         Tool               `json:"tool"`
	Host         Host               `json:"host"`
	Target       TargetInfo         `json:"target"`
	Settings     CapVerdictSettings `json:"settings"`
	Cap          *Cap               `json:"cap"`
	Cells        []CapVerdictCell   `json:"cells"`
	Passed       int                `json:"passed"`
	Failed       int                `json:"failed"`
	Inconclusive int                `json:"inconclusive"`
	// Above counts the cells that did more than a volume's provisioned
	// limits (CapCheck.Above); absent under a cgroup's cap.
	Above int `json:"above,omitempty"`
}

// CapVerdictSettings are the run's settings and the verdict's rules.
type CapVerdictSettings struct {
	Settings
	TolerancePct        float64 `json:"tolerance_pct"`
	CounterTolerancePct float64 `json:"counter_tolerance_pct"`
	// Window says how each capped cell was measured.
	Window string `json:"window"`
}

// CapVerdictCell is one pattern's verdict: the cell's judgement
// (CapCheck, its fields inline) beside the figures it judged.
type CapVerdictCell struct {
	Name         string  `json:"name"`
	Pattern      Pattern `json:"pattern"`
	MeasuredIOPS float64 `json:"measured_iops"`
	// IOs are the I/Os iomatrix completed over the whole pattern (ramp and
	// drain included); RequestsPerIO turns them into ExpectedRequests,
	// which the kernel's count for the cgroup (KernelRequests) must equal.
	IOs            Counts   `json:"iomatrix_ios"`
	KernelRequests *Counts  `json:"kernel_requests"`
	Error          *IOError `json:"error,omitempty"`
	// Stop, Rounds and CIPct say how the cell's window ended and how
	// precise its IOPS are (see Result).
	Stop   string   `json:"stop,omitempty"`
	Rounds int      `json:"rounds,omitempty"`
	CIPct  *float64 `json:"ci_pct,omitempty"`
	CapCheck
}
