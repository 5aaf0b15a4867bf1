package isolate

import (
	"context"
	"fmt"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// IOCostDevice is iocost on a disk as isolate --control iocost finds it
// (enabled, with its lines), switched off and on between phases and left
// as it was found.
type IOCostDevice struct {
	host iocost.Host
	// Dev is the disk (MAJ:MIN); Model and QoS its lines as found.
	Dev, Model, QoS string
}

// OffError is a disk whose iocost is not enabled: there is nothing to
// isolate with until it is set up (iocost apply).
type OffError struct{ Dev, QoS string }

func (e *OffError) Error() string {
	return fmt.Sprintf("iocost is not enabled on %s (io.cost.qos: %s)", e.Dev, iocost.Shown(e.QoS))
}

// FindIOCost finds iocost on the disk target is on (a file that does not
// exist yet: its directory's, cgroup.TargetPath), on the host whose
// cgroup2 root is cgroupRoot, checks that it can run there and is
// enabled, and reads its lines, touching nothing. A target on no block
// device is bad input of the option "device" (iocost.Resolve); a host or
// device that cannot take iocost is iocost.ErrUnusable; one where it is
// off, an *OffError.
func FindIOCost(sys sysfs.FS, cgroupRoot, target string) (*IOCostDevice, error) {
	h, dev, _, err := iocost.Resolve(sys, cgroupRoot, cgroup.TargetPath(target), "")
	if err != nil {
		return nil, err
	}
	if err := h.Check(dev); err != nil {
		return nil, err
	}
	on, qos, err := h.Enabled(dev)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", iocost.ErrUnusable, err)
	}
	if !on {
		return nil, &OffError{Dev: dev, QoS: qos}
	}
	model, _, err := h.Lines(dev)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", iocost.ErrUnusable, err)
	}
	return &IOCostDevice{host: h, Dev: dev, Model: model, QoS: qos}, nil
}

// run is RunIOCost on the disk d, with the pair in s, started in a
// cgroup without limits: the aggressor is the session's own child, the
// victim a member added beside it. c's pair, window, pass mark, weights,
// io.max and notices are the caller's; the rest is filled in here.
// Whatever happens, d's io.cost.qos is left as it was found.
func (d *IOCostDevice) run(ctx context.Context, s *session.Session, c IOCostConfig) (*results.IsolateReport, error) {
	if dev := s.Cap().Device; dev != d.Dev {
		c.Notice(fmt.Sprintf("the cgroups' device is %s, iocost's %s (the disk)", dev, d.Dev))
	}
	victim, err := s.AddMember()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := d.enable(true); err != nil {
			c.Notice(fmt.Sprintf("warning: io.cost.qos of %s not restored to %q: %v", d.Dev, d.QoS, err))
		}
	}()
	c.VictimM, c.AggressorM, c.Enable, c.Info = victim, s.Member(), d.enable, d.info()
	c.Controller = d.controller(victim.Path(), s.Member().Path())
	c.Report = frame(s, c.Options)
	return RunIOCost(ctx, c)
}

// enable turns iocost on or off on the disk, the rest of its line as
// found (IOCostConfig.Enable): on, it is the line found.
func (d *IOCostDevice) enable(on bool) error { return d.host.SetEnabled(d.Dev, on, d.QoS) }

// controller reads the controller's vrate and the device time it
// charged the cgroups victim and aggressor (IOCostConfig.Controller).
func (d *IOCostDevice) controller(victim, aggressor string) func() (float64, uint64, uint64, bool, error) {
	return func() (float64, uint64, uint64, bool, error) {
		st, ok, err := d.host.Stat(d.Dev, victim, aggressor)
		if err != nil || !ok {
			return 0, 0, 0, false, err
		}
		return st.VRatePct, st.UsageUS[0], st.UsageUS[1], true, nil
	}
}

// info is the disk and its lines, as the report records them.
func (d *IOCostDevice) info() results.IsolateIOCost {
	return results.IsolateIOCost{Device: d.Dev, Model: d.Model, QoS: d.QoS}
}
