package session

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Asked is what a run resuming a results file was asked: a nil field (or
// "") was not given. A resumed sweep keeps its file's settings, so that
// its matrix never mixes cells measured differently; what is asked may
// only repeat them.
type Asked struct {
	Target  string
	Profile *profiles.Profile
	// Runtime is a fixed runtime asked; Auto says the runtime was asked
	// as auto (then Runtime is nil).
	Runtime *time.Duration
	Auto    bool
	// The auto window's bounds and precision (a share, 0.02 for 2 %).
	MinRuntime, MaxRuntime *time.Duration
	Precision              *float64
	Ramp                   *time.Duration
	Size                   *int64
	// Cap or Cgroup: the cap asked (its device is not compared), CapText
	// as it was written.
	Cap     *cgroup.Limit
	CapText string
	Cgroup  string
	// RateSweep is the load–latency sweep asked: nil for none; its
	// fields empty (or a zero shape) where not given.
	RateSweep *results.RateSweepSettings
}

// Resumed is what a resumed run takes from its file.
type Resumed struct {
	Target  string
	Profile *profiles.Profile
	Runtime time.Duration
	Ramp    time.Duration
	// Auto, when set, is the file's auto window: its bounds, and its
	// precision as a percentage.
	Auto *results.AutoSettings
	// Cap is the file's cap to apply again (CapSpec its words), or Join
	// the existing cgroup the file was measured in; both empty when the
	// file was measured uncapped.
	Cap     *cgroup.Limit
	CapSpec string
	Join    string
	// RateSweep is the file's load–latency sweep, which goes on as it
	// began; nil for a sweep of a profile.
	RateSweep *results.RateSweepSettings
}

// Conflict is a setting asked on resuming that differs from the file's.
// Asked is the value asked as a user writes it ("" for one not worth
// repeating), File what the file says, named ("runtime 20s"); File is ""
// for a cap asked of a file measured uncapped.
type Conflict struct {
	Setting     string // target, profile, runtime, min-runtime, max-runtime, precision, ramp, size, cap, cgroup, rates, arrival, pattern
	Asked, File string
}

func (c *Conflict) Error() string {
	switch {
	case c.File == "":
		return fmt.Sprintf("%s %s: the file was measured without a cap", c.Setting, c.Asked)
	case c.Asked == "":
		return c.Setting + " differs from the file's " + c.File
	}
	return fmt.Sprintf("%s %s differs from the file's %s", c.Setting, c.Asked, c.File)
}

// Resume returns what a run asked a (the command line's settings)
// resuming d keeps, or the Conflict of a setting asked otherwise.
func Resume(d *results.Document, a Asked) (*Resumed, error) {
	s := d.Settings
	r := &Resumed{Target: d.Target.Path, Profile: a.Profile, Runtime: time.Duration(s.RuntimeNS), Ramp: time.Duration(s.RampNS), Auto: s.Auto}
	if a.Target != "" {
		if abs, _ := filepath.Abs(a.Target); abs != d.Target.Path {
			return nil, &Conflict{"target", abs, "target " + d.Target.Path}
		}
	}
	if a.Profile != nil && a.Profile.Name != s.Profile {
		return nil, &Conflict{"profile", a.Profile.Name, "profile " + s.Profile}
	}
	if err := resumeRates(s.RateSweep, a.RateSweep, r); err != nil {
		return nil, err
	}
	switch {
	case a.Profile == nil && r.RateSweep != nil:
		// The shape is the file's own: its profile may be no more than
		// a name for it.
		r.Profile = &profiles.Profile{Name: s.Profile, Patterns: []results.Pattern{r.RateSweep.Shape}}
	case a.Profile == nil:
		src := s.Profile
		if s.ProfileFile != "" {
			src = s.ProfileFile
		}
		p, err := profiles.Load(src)
		if err != nil {
			return nil, fmt.Errorf("the file's profile: %w", err)
		}
		r.Profile = p
	}
	if err := resumeMixes(d, r.Profile); err != nil {
		return nil, err
	}
	if err := resumeWindow(s, a); err != nil {
		return nil, err
	}
	if a.Ramp != nil && int64(*a.Ramp) != s.RampNS {
		return nil, &Conflict{"ramp", a.Ramp.String(), "ramp " + time.Duration(s.RampNS).String()}
	}
	if a.Size != nil && *a.Size != s.SizeBytes {
		return nil, &Conflict{"size", units.FormatSize(*a.Size), "size " + units.FormatSize(s.SizeBytes)}
	}
	return r, resumeCap(d.Cap, a, r)
}

// resumeMixes refuses a profile that no longer holds a pattern of the
// file with a block-size mix or a skewed distribution: a profile file
// edited to another mix would otherwise measure its new cells beside the
// old ones, and the matrix would mix two workloads under one name.
func resumeMixes(d *results.Document, p *profiles.Profile) error {
	names := map[string]bool{}
	for _, pat := range p.Patterns {
		names[pat.Name()] = true
	}
	for _, res := range d.Results {
		if (res.Pattern.BSSplit != "" || res.Pattern.Distribution != "") && !names[res.Name] {
			return &Conflict{"profile", p.Name, "pattern " + res.Name + " (its mix or distribution is not in the profile)"}
		}
	}
	return nil
}

// resumeRates keeps a load–latency sweep one: its loads, arrivals and
// shape asked otherwise, or a sweep of loads asked of a file that is none,
// are refused, since the curve would join loads of different shapes or
// schedules.
func resumeRates(file, asked *results.RateSweepSettings, r *Resumed) error {
	r.RateSweep = file
	switch {
	case asked == nil:
		return nil
	case file == nil:
		setting := "rates"
		switch {
		case asked.Rates != "":
		case asked.Arrival != "":
			setting = "arrival"
		default:
			setting = "pattern"
		}
		return &Conflict{Setting: setting, File: "sweep of a profile, no load–latency sweep"}
	case asked.Rates != "" && asked.Rates != file.Rates:
		return &Conflict{"rates", asked.Rates, "rates " + file.Rates}
	case asked.Arrival != "" && asked.Arrival != file.Arrival:
		return &Conflict{"arrival", asked.Arrival, "arrival " + file.Arrival}
	case asked.Shape != (results.Pattern{}) && asked.Shape != file.Shape:
		return &Conflict{"pattern", asked.Shape.Name(), "pattern " + file.Shape.Name()}
	}
	return nil
}

// resumeWindow refuses a runtime asked otherwise than the file's: a
// fixed runtime for an auto sweep or the reverse, another runtime, or
// other auto bounds or precision.
func resumeWindow(s results.Settings, a Asked) error {
	asked := ""
	switch {
	case a.Auto:
		asked = "auto"
	case a.Runtime != nil:
		asked = a.Runtime.String()
	}
	f := s.Auto
	if asked != "" && a.Auto != (f != nil) {
		return &Conflict{"runtime", asked, "runtime " + s.RuntimeWords()}
	}
	if f == nil {
		if a.Runtime != nil && int64(*a.Runtime) != s.RuntimeNS {
			return &Conflict{"runtime", asked, "runtime " + s.RuntimeWords()}
		}
		return nil // the auto bounds are refused without auto
	}
	for _, b := range []struct {
		setting string
		asked   bool
		same    bool
		file    string
	}{
		{"min-runtime", a.MinRuntime != nil, a.MinRuntime != nil && int64(*a.MinRuntime) == f.MinRuntimeNS, time.Duration(f.MinRuntimeNS).String()},
		{"max-runtime", a.MaxRuntime != nil, a.MaxRuntime != nil && int64(*a.MaxRuntime) == f.MaxRuntimeNS, time.Duration(f.MaxRuntimeNS).String()},
		{"precision", a.Precision != nil, a.Precision != nil && *a.Precision*100 == f.PrecisionPct, units.FormatPercent(f.PrecisionPct)},
	} {
		if b.asked && !b.same {
			return &Conflict{Setting: b.setting, File: b.file}
		}
	}
	return nil
}

// resumeCap keeps a resumed run under the cap its first part ran under:
// without a cap asked, the file's cap is applied again (or its cgroup
// joined again); a cap asked that differs from it is refused, so that no
// matrix mixes capped and uncapped cells.
func resumeCap(c *results.Cap, a Asked, r *Resumed) error {
	asked := a.Cap != nil || a.Cgroup != ""
	if c == nil {
		if asked {
			return &Conflict{Setting: "cap", Asked: a.CapText + a.Cgroup}
		}
		return nil
	}
	fileCap := report.CapSpec(c)
	joined := !strings.Contains(c.Cgroup, "/"+cgroup.Parent+"/")
	switch {
	case !asked && joined:
		r.Join = c.Cgroup
	case !asked:
		l := cgroup.LimitOf(c)
		r.Cap, r.CapSpec = &l, fileCap
	case a.Cgroup != "" && (!joined || a.Cgroup != c.Cgroup):
		return &Conflict{"cgroup", a.Cgroup, fmt.Sprintf("cap (%s in %s)", fileCap, c.Cgroup)}
	case a.Cap != nil:
		l := *a.Cap
		l.Device = cgroup.LimitOf(c).Device
		if joined || l != cgroup.LimitOf(c) {
			return &Conflict{"cap", a.CapText, "cap " + fileCap}
		}
	}
	return nil
}
