package results

// IsolatePhase is one phase of an isolation test: the victim's result
// and, beside it, the aggressor's.
type IsolatePhase struct {
	Name      string  `json:"name"`
	Victim    Result  `json:"victim"`
	Aggressor *Result `json:"aggressor,omitempty"`
	// Control is how the pair was held in the phase, under --control
	// iocost: "iocost on, weights 500:100", "iocost off", "iocost off,
	// aggressor io.max wiops=2000".
	Control string `json:"control,omitempty"`
	// AggressorCap is the aggressor's io.max in an io.max phase.
	AggressorCap *Cap `json:"aggressor_cap,omitempty"`
	// VictimIdle: the aggressor ran alone (Victim is empty), to show
	// what the control lets it do when the victim needs nothing.
	VictimIdle bool `json:"victim_idle,omitempty"`
	// Controller is what the kernel's controller said of a phase with
	// iocost on; absent with it off, or where the kernel did not say.
	Controller *PhaseController `json:"controller,omitempty"`
}

// PhaseController is iocost's own account of a phase (io.stat's cost.*
// keys): the vrate it ran the device at as the phase ended, in % of the
// model's rate (below 100: it held the device back to keep the QoS's
// latency targets), and the device time it charged each member over the
// phase, by the model's costs, in ms (the kernel updates the figure once
// per period of the controller, so it is the phase's to within one).
type PhaseController struct {
	VRatePct         float64 `json:"vrate_pct"`
	VictimUsageMS    float64 `json:"victim_usage_ms"`
	AggressorUsageMS float64 `json:"aggressor_usage_ms"`
}

// PairIOPS is the victim's IOPS and the aggressor's together.
func (p IsolatePhase) PairIOPS() float64 {
	t := p.Victim.Total.IOPS
	if p.Aggressor != nil {
		t += p.Aggressor.Total.IOPS
	}
	return t
}

// IsolateIOCost is what an isolation test under the kernel's
// proportional controller found (isolate --control iocost): the victim
// and the aggressor in sibling cgroups under io.weight, against the pair
// uncontrolled and against io.max caps on the aggressor.
type IsolateIOCost struct {
	Device string `json:"device"`
	// Model and QoS are the root's lines for the device while the
	// weighted phase ran.
	Model           string `json:"model"`
	QoS             string `json:"qos"`
	VictimWeight    int    `json:"victim_weight"`
	AggressorWeight int    `json:"aggressor_weight"`
	// Gain is the victim's IOPS beside the weighted aggressor over its
	// IOPS beside the uncontrolled one.
	Gain float64 `json:"gain"`
	// Conservation is the pair's IOPS weighted over the pair's
	// uncontrolled: how much of what the device gave the two together
	// the controller kept.
	Conservation float64 `json:"work_conservation"`
	// SameProtection is the share of the weighted victim's IOPS an io.max
	// phase must leave the victim to count as protecting it as well.
	SameProtection float64 `json:"same_protection"`
	// IOMaxSearched: the io.max caps were searched (halved from the
	// aggressor's weighted IOPS, then bisected), not given with --cap.
	IOMaxSearched bool `json:"iomax_searched"`
	// IOMaxPhase is the io.max phase that protected the victim as well,
	// with the most room for the aggressor ("" when none did); PairVsIOMax
	// the weighted pair's IOPS over that phase's pair.
	IOMaxPhase  string  `json:"iomax_phase,omitempty"`
	PairVsIOMax float64 `json:"pair_vs_iomax,omitempty"`
	// With the victim idle, the aggressor's IOPS under that io.max and
	// weighted, and weighted over io.max: the work a cap set for the
	// victim's sake gives up when the victim needs nothing.
	IdleIOMax    float64 `json:"idle_iomax_iops,omitempty"`
	IdleWeighted float64 `json:"idle_weighted_iops,omitempty"`
	IdleGain     float64 `json:"idle_gain,omitempty"`
}

// IsolateReport is the document of an isolation test: its four phases
// (alone, uncapped, capped, alone again) and the verdict on them.
type IsolateReport struct {
	// Control is how the aggressor is held: "cap" (a cgroup with io.max or
	// blkio throttle limits, the default) or "iocost" (IOCost).
	Control      string         `json:"control,omitempty"`
	IOCost       *IsolateIOCost `json:"iocost,omitempty"`
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
	P99Inflation *float64       `json:"p99_inflation"` // capped ÷ alone, victim p99; null where a phase did no I/O
	MinIsolation float64        `json:"min_isolation"` // the pass mark
	Protected    bool           `json:"protected"`     // Isolation ≥ MinIsolation
	// Inconclusive: the phases cannot carry a verdict, which is not
	// given (exit status 3). OtherLoad names the phases another process
	// loaded the device in; Unsteady says the victim alone was not
	// steady enough to be the baseline; Starved says how the victim's
	// waits for a CPU could turn the verdict (see isolate.Judge).
	Inconclusive bool     `json:"inconclusive"`
	OtherLoad    []string `json:"other_load,omitempty"`
	Unsteady     string   `json:"unsteady,omitempty"`
	Starved      string   `json:"cpu_starved,omitempty"`
	NoContention bool     `json:"no_contention"`        // the uncapped aggressor did not hurt either
	Notes        []string `json:"notes,omitempty"`      // what to make of it
	Verdict      string   `json:"verdict"`              // one line
	FinishedAt   string   `json:"finished_at"`          // RFC 3339
	StartedAt    string   `json:"started_at"`           // RFC 3339
	CapIOPS      float64  `json:"cap_model_iops"`       // what the cap allows the aggressor
	AggCappedPct float64  `json:"aggressor_vs_cap_pct"` // capped aggressor IOPS ÷ model − 1, in %
}
