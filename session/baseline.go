package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// BaselineFor is the measurement a baseline must match: the target, the
// window as asked and as aligned to the throttle, and the patterns.
type BaselineFor struct {
	Plan     *target.Plan
	Asked    iotest.Options // before alignToThrottle
	Options  iotest.Options // after it
	Patterns []results.Pattern
}

// CheckBaseline returns the uncapped results of d by name, refusing a
// document measured otherwise than the capped run will be: another
// target or size, engine, runtime or ramp (as asked, or as aligned to
// the throttle), under a cap, or without a pattern of the run. Its
// figures would judge the cells against another device or another
// method. The error says why, in words for the file at fault.
func CheckBaseline(d *results.Document, want BaselineFor) (map[string]results.Result, error) {
	s, o, asked, plan := d.Settings, want.Options, want.Asked, want.Plan
	refuse := fmt.Errorf
	switch {
	case d.Cap != nil:
		return nil, refuse("measured under a cap (%s); a baseline must be uncapped", report.DescribeCap(d.Cap))
	case d.Target.Path != plan.Path:
		return nil, refuse("its target %s differs from this run's %s", d.Target.Path, plan.Path)
	case d.Target.SizeBytes != plan.Size:
		return nil, refuse("its target size %s differs from this run's %s", units.FormatSize(d.Target.SizeBytes), units.FormatSize(plan.Size))
	case s.Engine != o.Engine:
		return nil, refuse("its engine %s differs from this run's %s", s.Engine, o.Engine)
	case (s.Auto != nil) != (asked.Auto != nil):
		return nil, refuse("its runtime %s differs from this run's %s", s.RuntimeWords(), o.Settings().RuntimeWords())
	case s.RuntimeNS != int64(asked.Runtime) && s.RuntimeNS != int64(o.Runtime):
		return nil, refuse("its runtime %s differs from this run's %s", time.Duration(s.RuntimeNS), o.Runtime)
	case s.RampNS != int64(asked.Ramp) && s.RampNS != int64(o.Ramp):
		return nil, refuse("its ramp %s differs from this run's %s", time.Duration(s.RampNS), o.Ramp)
	}
	baseline := map[string]results.Result{}
	for _, r := range d.Results {
		if r.Error == nil {
			baseline[r.Name] = r
		}
	}
	var missing []string
	for _, p := range want.Patterns {
		if _, ok := baseline[p.Name()]; !ok {
			missing = append(missing, p.Name())
		}
	}
	if len(missing) > 0 {
		return nil, refuse("lacks %d pattern(s) of the profile (or they failed there): %s", len(missing), strings.Join(missing, ", "))
	}
	return baseline, nil
}
