package results

// IsolatePhase is one phase of an isolation test: the victim's result
// and, beside it, the aggressor's.
type IsolatePhase struct {
	Name      string  `json:"name"`
	Victim    Result  `json:"victim"`
	Aggressor *Result `json:"aggressor,omitempty"`
}

// IsolateReport is the document of an isolation test: its four phases
// (alone, uncapped, capped, alone again) and the verdict on them.
type IsolateReport struct {
	Tool         Tool           `json:"tool"`
	Host         Host           `json:"host"`
	Target       TargetInfo     `json:"target"`
	Cap          *Cap           `json:"cap"`
	RuntimeNS    int64          `json:"runtime_ns"`
	RampNS       int64          `json:"ramp_ns"`
	Engine       string         `json:"engine"`
	Seed         uint64         `json:"seed"`
	Phases       []IsolatePhase `json:"phases"`
	Drift        float64        `json:"alone_drift"`   // alone again ÷ alone − 1
	Isolation    float64        `json:"isolation"`     // capped ÷ alone, victim IOPS
	Unprotected  float64        `json:"unprotected"`   // uncapped ÷ alone
	P99Inflation float64        `json:"p99_inflation"` // capped ÷ alone, victim p99
	MinIsolation float64        `json:"min_isolation"` // the pass mark
	Protected    bool           `json:"protected"`     // Isolation ≥ MinIsolation
	// Inconclusive: the phases cannot carry a verdict, which is not
	// given (exit status 3). OtherLoad names the phases another process
	// loaded the device in; Unsteady says the victim alone was not
	// steady enough to be the baseline (see isolate.Judge).
	Inconclusive bool     `json:"inconclusive"`
	OtherLoad    []string `json:"other_load,omitempty"`
	Unsteady     string   `json:"unsteady,omitempty"`
	NoContention bool     `json:"no_contention"`        // the uncapped aggressor did not hurt either
	Notes        []string `json:"notes,omitempty"`      // what to make of it
	Verdict      string   `json:"verdict"`              // one line
	FinishedAt   string   `json:"finished_at"`          // RFC 3339
	StartedAt    string   `json:"started_at"`           // RFC 3339
	CapIOPS      float64  `json:"cap_model_iops"`       // what the cap allows the aggressor
	AggCappedPct float64  `json:"aggressor_vs_cap_pct"` // capped aggressor IOPS ÷ model − 1, in %
}
