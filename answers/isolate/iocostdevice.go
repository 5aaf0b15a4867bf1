package isolate

import (
	"fmt"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/results"
)

// IOCostDevice is iocost on a disk as isolate --control iocost finds it
// (enabled, with its lines), switched off and on between phases and left
// as it was found (Restore).
type IOCostDevice struct {
	host iocost.Host
	// Dev is the disk (MAJ:MIN); Model and QoS its lines as found.
	Dev, Model, QoS string
}

// OffError is a disk whose iocost is not enabled: there is nothing to
// isolate with until it is set up (iocost apply).
type OffError struct{ Dev, QoS string }

func (e *OffError) Error() string {
	qos := e.QoS
	if qos == "" {
		qos = "none"
	}
	return fmt.Sprintf("iocost is not enabled on %s (io.cost.qos: %s)", e.Dev, qos)
}

// FindIOCost checks that iocost can run on dev of h and is enabled there,
// and reads its lines, touching nothing. A host or device that cannot
// take iocost is iocost.ErrUnusable; one where it is off, an *OffError.
func FindIOCost(h iocost.Host, dev string) (*IOCostDevice, error) {
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

// Enable turns iocost on or off on the disk, the rest of its line as
// found (IOCostConfig.Enable).
func (d *IOCostDevice) Enable(on bool) error { return d.host.SetEnabled(d.Dev, on, d.QoS) }

// Restore leaves the disk's io.cost.qos as it was found.
func (d *IOCostDevice) Restore() error { return d.Enable(true) }

// Controller reads the controller's vrate and the device time it charged
// the cgroups victim and aggressor (IOCostConfig.Controller).
func (d *IOCostDevice) Controller(victim, aggressor string) func() (float64, uint64, uint64, bool, error) {
	return func() (float64, uint64, uint64, bool, error) {
		st, ok, err := d.host.Stat(d.Dev, victim, aggressor)
		if err != nil || !ok {
			return 0, 0, 0, false, err
		}
		return st.VRatePct, st.UsageUS[0], st.UsageUS[1], true, nil
	}
}

// Info is the disk and its lines, as the report records them.
func (d *IOCostDevice) Info() results.IsolateIOCost {
	return results.IsolateIOCost{Device: d.Dev, Model: d.Model, QoS: d.QoS}
}
