package iocost

import (
	"fmt"
	"io"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Request names a device's iocost as iocost apply, show and reset are
// given it: the device (a block device, or a path on its filesystem),
// the cgroup2 root and the sysfs it is read through, and the state file
// ("": the default, Resolve).
type Request struct {
	Sys        sysfs.FS
	CgroupRoot string
	Device     string
	State      string
}

// ApplyRequest is iocost apply as asked: the device, the results files
// its model is derived from, the vrate bounds (ParseVrate) and whether
// to write nothing.
type ApplyRequest struct {
	Request
	From   []string
	Vrate  string
	DryRun bool
}

// ApplyResult is what Apply did: the lines derived, what was read back,
// and what the user should know.
type ApplyResult struct {
	// VrateNote is what the user should know of the vrate bounds
	// (Report.SetVrate), told before the lines; nil: nothing.
	VrateNote *fault.Mention
	// Model and QoS are the lines derived ("" when Apply stopped before);
	// QoS says so when the kernel's own QoS is used.
	Model, QoS string
	// ReadBack is what the kernel read back once both lines were
	// written; nil on a dry run, or when applying failed.
	ReadBack *Applied
	// Notes are told after the lines: why applying would be refused (a
	// dry run), or where the state before is kept.
	Notes []string
}

// Apply derives the model and the QoS from r.From (FromFiles), checks
// that they are the device's and in the kernel's range, sets the vrate
// bounds and, unless r.DryRun, writes both lines to the root, keeping
// the lines before in the state file (Host.Apply). Before any file is
// read, a host or device that cannot take iocost is refused (Host.Check;
// on a dry run, only noted). Missing files, files of another device and
// a bad vrate are bad input of the options "from" and "vrate". What was
// done before an error is returned with it.
func (r ApplyRequest) Apply() (ApplyResult, error) {
	var res ApplyResult
	if len(r.From) == 0 {
		return res, fault.Input("from", "give the results files to derive the model from")
	}
	vrate, err := ParseVrate(r.Vrate)
	if err != nil {
		return res, err
	}
	h, dev, state, err := Resolve(r.Sys, r.CgroupRoot, r.Device, r.State)
	if err != nil {
		return res, err
	}
	refused := h.Check(dev)
	if refused != nil && !r.DryRun {
		return res, refused
	}
	rep, err := r.derive(dev, vrate, &res)
	if err != nil {
		return res, err
	}
	res.Model, res.QoS = rep.ModelLine, rep.QoSLine
	if res.QoS == "" {
		res.QoS = AutoQoSLine(dev) + " (no QoS derived: the kernel's own)"
	}
	if r.DryRun {
		if refused != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("note: applying would be refused: %v", refused))
		}
		return res, nil
	}
	a, err := h.Apply(dev, rep.Derived.Model, rep.Derived.QoS, state)
	if err != nil {
		return res, err
	}
	res.ReadBack = &a
	if a.Kept {
		res.Notes = append(res.Notes, fmt.Sprintf("keeping the state saved at %s in %s (iocost reset restores it)", a.Before.SavedAt, state))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("the lines before are saved in %s; iocost reset %s restores them", state, r.Device))
	}
	return res, nil
}

// derive is the report of r.From, checked to be dev's and in the
// kernel's range, with the vrate bounds set as v says (what to know of
// them in res.VrateNote).
func (r ApplyRequest) derive(dev string, v Vrate, res *ApplyResult) (Report, error) {
	rep, err := FromFiles(r.From)
	if err != nil {
		return rep, err
	}
	if got := rep.Derived.Device; got != dev {
		return rep, fault.AsInput(fault.NewMention(func(n fault.Namer) string {
			return fmt.Sprintf("%s %s: measured device %s, not %s (%s)", n("from"), r.From[0], got, dev, r.Device)
		}))
	}
	if err := CheckLines(rep.Derived.Model, rep.Derived.QoS); err != nil {
		return rep, err
	}
	res.VrateNote, err = rep.SetVrate(v)
	return rep, err
}

// WriteText prints the lines derived, if any, and, once applied, the
// lines read back.
func (a ApplyResult) WriteText(w io.Writer) error {
	if a.Model == "" {
		return nil
	}
	if _, err := fmt.Fprintf(w, "io.cost.model: %s\nio.cost.qos:   %s\n", a.Model, a.QoS); err != nil || a.ReadBack == nil {
		return err
	}
	_, err := fmt.Fprintf(w, "read back:\n  %s\n  %s\n", a.ReadBack.Model, a.ReadBack.QoS)
	return err
}

// ShowResult is a device's lines as the kernel lists them, and the state
// iocost apply saved.
type ShowResult struct {
	Dev        string // the disk, MAJ:MIN; "": nothing was read
	Model, QoS string // "" where the kernel lists none
	// StateFile is where the state is kept; Saved is the state, nil when
	// none could be read there.
	StateFile string
	Saved     *State
}

// Show reads the device's lines and the state apply saved. A host that
// is not pure cgroup v2, or a root whose lines cannot be read, is
// ErrUnusable.
func (r Request) Show() (ShowResult, error) {
	h, dev, state, err := Resolve(r.Sys, r.CgroupRoot, r.Device, r.State)
	if err != nil {
		return ShowResult{}, err
	}
	if h.Mode != "unified" {
		return ShowResult{}, h.Check(dev)
	}
	s := ShowResult{Dev: dev, StateFile: state}
	if s.Model, s.QoS, err = h.Lines(dev); err != nil {
		return ShowResult{}, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	if saved, err := ReadState(state); err == nil {
		s.Saved = &saved
	}
	return s, nil
}

// WriteText prints the lines, and the state saved when there is one.
func (s ShowResult) WriteText(w io.Writer) error {
	if s.Dev == "" {
		return nil
	}
	if _, err := fmt.Fprintf(w, "io.cost.model: %s\nio.cost.qos:   %s\n", Shown(s.Model), Shown(s.QoS)); err != nil || s.Saved == nil {
		return err
	}
	_, err := fmt.Fprintf(w, "saved by iocost apply at %s (%s), restored by iocost reset:\n  %s\n  %s\n",
		s.Saved.SavedAt, s.StateFile, Shown(s.Saved.Model), Shown(s.Saved.QoS))
	return err
}

// ResetResult is what Reset restored.
type ResetResult struct {
	Dev        string // the disk, MAJ:MIN; "": nothing was restored
	Model, QoS string // as read back
	// Notes are what the user should know of the lines restored.
	Notes []string
}

// Reset checks that the host and device can take iocost (Host.Check) and
// restores the lines saved by the first apply (Host.Reset).
func (r Request) Reset() (ResetResult, error) {
	h, dev, state, err := Resolve(r.Sys, r.CgroupRoot, r.Device, r.State)
	if err != nil {
		return ResetResult{}, err
	}
	if err := h.Check(dev); err != nil {
		return ResetResult{}, err
	}
	s, model, qos, err := h.Reset(dev, state)
	if err != nil {
		return ResetResult{}, err
	}
	res := ResetResult{Dev: dev, Model: model, QoS: qos}
	if s.Model == "" {
		res.Notes = append(res.Notes, fmt.Sprintf("note: the kernel listed no line for %s before; it keeps one now, set to its defaults (ctrl=auto, iocost disabled)", dev))
	}
	return res, nil
}

// WriteText prints the lines restored.
func (r ResetResult) WriteText(w io.Writer) error {
	if r.Dev == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "restored:\n  %s\n  %s\n", r.Model, r.QoS)
	return err
}
