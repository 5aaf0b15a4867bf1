package isolate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Member is one of two sibling cgroups, each with a child of this program
// in it (session.Member).
type Member interface {
	RunAt(ctx context.Context, at time.Time, p results.Pattern, o iotest.Options) (results.Result, error)
	SetLimit(l cgroup.Limit) error
	SetWeight(w int) error
}

// SameProtection is the share of the victim's IOPS beside the weighted
// aggressor that an io.max phase must leave it, to count as protecting it
// as well: a few per cent of a run's own noise, given to io.max.
const SameProtection = 0.95

// DefaultSearches is how many io.max phases a search runs.
const DefaultSearches = 5

// IOCostConfig is what RunIOCost measures.
type IOCostConfig struct {
	Config
	// VictimM and AggressorM are siblings below one parent, where the
	// kernel shares the device between them by their weights.
	VictimM, AggressorM           Member
	VictimWeight, AggressorWeight int
	// Enable turns iocost on or off on the device, the rest of its lines
	// left as they are; the caller restores the line as it found it.
	Enable func(on bool) error
	// Controller, when set, reads the controller's figures: its vrate and
	// the device time it charged the victim and the aggressor so far (ok
	// false when the kernel does not give them). A phase with iocost on
	// records them (results.PhaseController).
	Controller func() (vratePct float64, victimUS, aggressorUS uint64, ok bool, err error)
	// Cap is the aggressor's io.max in the comparison phase; nil: the
	// cap is searched, in at most Searches phases (DefaultSearches).
	Cap      *cgroup.Limit
	Searches int
	// Info is the device and its lines, recorded in the report.
	Info results.IsolateIOCost
	// Report is the report's frame (tool, host, target, window); Phases
	// and the judgement are filled in.
	Report results.IsolateReport
}

// RunIOCost measures the victim and the aggressor under the kernel's
// proportional controller, in these phases, each over the same window:
//
//  1. alone: the victim alone, iocost on;
//  2. uncontrolled: the pair, iocost off, no io.max;
//  3. weighted: the pair, iocost on, at their weights;
//  4. io.max: the pair, iocost off, the aggressor under io.max: the
//     cap given, or a search for the highest cap that leaves the victim
//     SameProtection of its weighted IOPS, halving from the aggressor's
//     weighted IOPS until the victim is as well protected, then
//     bisecting (geometrically) between the highest cap that protected
//     and the lowest that did not;
//  5. alone again: the victim alone, iocost on.
//
// and judges them (JudgeIOCost).
func RunIOCost(ctx context.Context, c IOCostConfig) (*results.IsolateReport, error) {
	info := c.Info
	info.VictimWeight, info.AggressorWeight, info.SameProtection = c.VictimWeight, c.AggressorWeight, SameProtection
	r := &iocostRun{c: c, rep: c.Report, aggOpts: c.Options, searches: c.Searches}
	r.rep.Control, r.rep.IOCost, r.rep.MinIsolation = "iocost", &info, c.MinIsolation
	r.aggOpts.Seed = c.Options.Seed + 1
	if err := c.VictimM.SetWeight(c.VictimWeight); err != nil {
		return nil, err
	}
	if err := c.AggressorM.SetWeight(c.AggressorWeight); err != nil {
		return nil, err
	}
	r.weights = fmt.Sprintf("iocost on, weights %d:%d", c.VictimWeight, c.AggressorWeight)
	if r.searches <= 0 {
		r.searches = DefaultSearches
	}
	if c.Cap != nil {
		r.searches = 1
	}
	if _, err := r.phase(ctx, "alone", r.weights, true, victimOnly, nil); err != nil {
		return nil, err
	}
	if _, err := r.phase(ctx, "uncontrolled", "iocost off", false, both, nil); err != nil {
		return nil, err
	}
	w, err := r.phase(ctx, "weighted", r.weights, true, both, nil)
	if err != nil {
		return nil, err
	}
	if err := r.ioMax(ctx, w); err != nil {
		return nil, err
	}
	if _, err := r.phase(ctx, "alone again", r.weights, true, victimOnly, nil); err != nil {
		return nil, err
	}
	r.rep.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	JudgeIOCost(&r.rep, c.Aggressor)
	return &r.rep, nil
}

// iocostRun is one RunIOCost: what it measures, the report it fills, and
// its phases counted.
type iocostRun struct {
	c       IOCostConfig
	rep     results.IsolateReport
	aggOpts iotest.Options // the aggressor's: its own seed
	// weights is the control of the phases with iocost on.
	weights string
	// searches are the io.max phases beside the victim; n counts the
	// phases run.
	searches, n int
}

// ioMax runs the io.max phases beside the victim (the cap given, or the
// search for it), against the weighted phase w, and then both controls
// with the victim idle: what each lets the aggressor do, the work that a
// cap set for the victim's sake gives up when the victim does not need
// it.
func (r *iocostRun) ioMax(ctx context.Context, w results.IsolatePhase) error {
	try := func(l cgroup.Limit) (bool, error) {
		p, err := r.phase(ctx, "io.max "+capSpec(l), "iocost off, aggressor io.max "+capSpec(l), false, both, &l)
		return p.Victim.Total.IOPS >= SameProtection*w.Victim.Total.IOPS, err
	}
	if r.c.Cap != nil {
		if _, err := try(*r.c.Cap); err != nil {
			return err
		}
	} else {
		r.rep.IOCost.IOMaxSearched = true
		if err := searchCap(w, r.c.Aggressor, r.searches, try); err != nil {
			return err
		}
	}
	l := equivalentCap(r.rep.Phases, w, r.c.Cap)
	if _, err := r.phase(ctx, "idle victim, io.max "+capSpec(l), "iocost off, aggressor io.max "+capSpec(l), false, aggressorOnly, &l); err != nil {
		return err
	}
	if err := r.c.AggressorM.SetLimit(cgroup.Limit{}); err != nil {
		return err
	}
	_, err := r.phase(ctx, "idle victim, weighted", r.weights, true, aggressorOnly, nil)
	return err
}

// phase runs one phase: who runs, with iocost on or off and the
// aggressor under limit (nil: as it is), recorded in the report with the
// controller's figures when iocost is on.
func (r *iocostRun) phase(ctx context.Context, name, control string, on bool, who members, limit *cgroup.Limit) (results.IsolatePhase, error) {
	c, o := r.c, r.c.Options
	r.n++
	what := c.Victim.Name() + " alone"
	switch who {
	case both:
		what = c.Victim.Name() + " beside " + c.Aggressor.Name()
	case aggressorOnly:
		what = c.Aggressor.Name() + " alone, the victim idle"
	}
	c.Notice(fmt.Sprintf("phase %d of at most %d, %s (%s): %s for %s + %s ramp", r.n, 6+r.searches, name, control, what, o.Runtime, o.Ramp))
	if err := c.Enable(on); err != nil {
		return results.IsolatePhase{}, err
	}
	if limit != nil {
		if err := c.AggressorM.SetLimit(*limit); err != nil {
			return results.IsolatePhase{}, err
		}
	}
	var before [2]uint64
	counted := on && c.Controller != nil
	if counted {
		_, v, a, ok := r.controller(name)
		before, counted = [2]uint64{v, a}, ok
	}
	p, err := runPair(ctx, who, c.VictimM, c.Victim, o, c.AggressorM, c.Aggressor, r.aggOpts)
	if err != nil {
		return p, fmt.Errorf("phase %s: %w", name, err)
	}
	p.Name, p.Control, p.VictimIdle = name, control, who == aggressorOnly
	if counted {
		if vrate, v, a, ok := r.controller(name); ok {
			ms := func(after, before uint64) float64 { return float64(after-min(before, after)) / 1000 }
			p.Controller = &results.PhaseController{VRatePct: vrate, VictimUsageMS: ms(v, before[0]), AggressorUsageMS: ms(a, before[1])}
		}
	}
	if limit != nil {
		p.AggressorCap = limit.Record(2, "")
	}
	r.rep.Phases = append(r.rep.Phases, p)
	return p, nil
}

// controller reads the controller's figures during the phase name. They
// explain a phase; they are not what it measures, so a failure to read
// them is said, not fatal.
func (r *iocostRun) controller(name string) (float64, uint64, uint64, bool) {
	vrate, v, a, ok, err := r.c.Controller()
	if err != nil {
		r.c.Notice(fmt.Sprintf("warning: phase %s: %v", name, err))
	}
	return vrate, v, a, ok && err == nil
}

// members say who runs in a phase.
type members int

const (
	victimOnly members = iota
	both
	aggressorOnly
)

// equivalentCap is the io.max that protected the victim as well as the
// weighted phase w, with the most room for the aggressor: the one given,
// else the highest tried that did, else the lowest tried.
func equivalentCap(phases []results.IsolatePhase, w results.IsolatePhase, given *cgroup.Limit) cgroup.Limit {
	if given != nil {
		return *given
	}
	best, lowest := bestCap(phases, w)
	if best < 0 {
		best = lowest
	}
	return cgroup.LimitOf(phases[best].AggressorCap)
}

// bestCap finds, among the io.max phases beside the victim, the one with
// the highest cap that left the victim SameProtection of its IOPS in the
// weighted phase w, and the one with the lowest cap (-1 for none).
func bestCap(phases []results.IsolatePhase, w results.IsolatePhase) (best, lowest int) {
	best, lowest = -1, -1
	for i, p := range phases {
		if p.AggressorCap == nil || p.VictimIdle {
			continue
		}
		if lowest < 0 || capIOPS(p) < capIOPS(phases[lowest]) {
			lowest = i
		}
		if p.Victim.Total.IOPS >= SameProtection*w.Victim.Total.IOPS && (best < 0 || capIOPS(p) > capIOPS(phases[best])) {
			best = i
		}
	}
	return best, lowest
}

// searchCap runs the io.max phases of a search (RunIOCost): try runs one
// at an aggressor IOPS cap and tells whether it protected the victim as
// well as the weighted phase w did.
func searchCap(w results.IsolatePhase, aggressor results.Pattern, tries int, try func(cgroup.Limit) (bool, error)) error {
	hi := 0.0 // the lowest cap that did not protect
	lo := 0.0 // the highest cap that did
	c := math.Max(w.Aggressor.Total.IOPS, 2)
	for range tries {
		ok, err := try(aggressorCap(aggressor, c))
		if err != nil {
			return err
		}
		if ok {
			lo = c
		} else {
			hi = c
		}
		switch {
		case lo == 0:
			c /= 2
		case hi == 0:
			return nil // it protected at the aggressor's own weighted rate
		default:
			c = math.Sqrt(lo * hi)
		}
		if c < 1 || (hi > 0 && lo > 0 && hi/lo < 1.05) {
			return nil
		}
	}
	return nil
}

// aggressorCap is the io.max that holds the aggressor to iops IOPS, split
// between reads and writes as the aggressor mixes them.
func aggressorCap(p results.Pattern, iops float64) cgroup.Limit {
	var l cgroup.Limit
	if p.ReadPct > 0 {
		l.ReadIOPS = uint64(max(1, math.Round(iops*float64(p.ReadPct)/100)))
	}
	if p.ReadPct < 100 {
		l.WriteIOPS = uint64(max(1, math.Round(iops*float64(100-p.ReadPct)/100)))
	}
	return l
}

// capSpec is a limit's keys as --cap takes them.
func capSpec(l cgroup.Limit) string { return report.CapSpec(l.Record(2, "")) }

// runPair runs the victim, the aggressor or both in their members,
// started at one moment over windows of the same length.
func runPair(ctx context.Context, who members, vm Member, victim results.Pattern, vo iotest.Options,
	am Member, ap results.Pattern, ao iotest.Options) (results.IsolatePhase, error) {
	at := time.Now().Add(cgroup.ThrottleQuiet + 50*time.Millisecond)
	type out struct {
		r   results.Result
		err error
	}
	done := make(chan out, 1)
	if who != victimOnly {
		go func() {
			r, err := am.RunAt(ctx, at, ap, ao)
			done <- out{r, err}
		}()
	}
	var phase results.IsolatePhase
	var err error
	if who != aggressorOnly {
		phase.Victim, err = vm.RunAt(ctx, at, victim, vo)
	}
	if who != victimOnly {
		a := <-done
		if err == nil && a.err != nil {
			return phase, fmt.Errorf("aggressor %s: %w", ap.Name(), a.err)
		}
		phase.Aggressor = &a.r
	}
	if err != nil {
		return phase, fmt.Errorf("victim %s: %w", victim.Name(), err)
	}
	return phase, nil
}

// JudgeIOCost judges an iocost isolation test: the verdict as Judge gives
// it, on the weighted phase, and the controller's figures (gain, work
// conservation, and the pair against the io.max phase that protected the
// victim as well).
func JudgeIOCost(rep *results.IsolateReport, aggressor results.Pattern) {
	Judge(rep, aggressor)
	ic := rep.IOCost
	un, w := rep.Phases[1], rep.Phases[2]
	if un.Victim.Total.IOPS > 0 {
		ic.Gain = w.Victim.Total.IOPS / un.Victim.Total.IOPS
	}
	if u := un.PairIOPS(); u > 0 {
		ic.Conservation = w.PairIOPS() / u
	}
	for _, p := range rep.Phases {
		switch {
		case !p.VictimIdle || p.Aggressor == nil:
		case p.AggressorCap != nil:
			ic.IdleIOMax = p.Aggressor.Total.IOPS
		default:
			ic.IdleWeighted = p.Aggressor.Total.IOPS
		}
	}
	if ic.IdleIOMax > 0 {
		ic.IdleGain = ic.IdleWeighted / ic.IdleIOMax
	}
	best, lowest := bestCap(rep.Phases, w)
	cmp := ""
	switch {
	case best >= 0:
		b := rep.Phases[best]
		ic.IOMaxPhase = b.Name
		if b.PairIOPS() > 0 {
			ic.PairVsIOMax = w.PairIOPS() / b.PairIOPS()
		}
		cmp = fmt.Sprintf("; under %s, the highest io.max tried that protected the victim as well, the pair did %s IOPS, against %s weighted (×%.2f)",
			b.Name, units.Thousands(b.PairIOPS(), 0), units.Thousands(w.PairIOPS(), 0), ic.PairVsIOMax)
	case lowest >= 0:
		l := rep.Phases[lowest]
		rep.Notes = append(rep.Notes, fmt.Sprintf("no io.max tried protected the victim as well as iocost: under the lowest, %s, it did %s IOPS, against %s weighted",
			l.Name, units.Thousands(l.Victim.Total.IOPS, 0), units.Thousands(w.Victim.Total.IOPS, 0)))
	}
	idle := ""
	if ic.IdleGain > 0 {
		idle = fmt.Sprintf("; with the victim idle, iocost let the aggressor do %s IOPS, that io.max %s (×%.2f)",
			units.Thousands(ic.IdleWeighted, 0), units.Thousands(ic.IdleIOMax, 0), ic.IdleGain)
	}
	rep.Verdict += fmt.Sprintf("; beside the weighted aggressor the victim did ×%.2f its IOPS beside the uncontrolled one, the pair %.0f %% of its uncontrolled IOPS%s%s",
		ic.Gain, 100*ic.Conservation, cmp, idle)
}

// capIOPS is the IOPS an io.max phase allowed the aggressor.
func capIOPS(p results.IsolatePhase) float64 {
	return float64(p.AggressorCap.ReadIOPS + p.AggressorCap.WriteIOPS)
}
