package iocost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// The root's files of the controller.
const (
	ModelFile = "io.cost.model"
	QoSFile   = "io.cost.qos"
)

// ErrUnusable: iocost cannot be set on this host or device (the error
// says why).
var ErrUnusable = errors.New("iocost cannot be set here")

// Host is where the controller's files are: the cgroup2 root, and the
// sysfs that says whether the device is blk-mq.
type Host struct {
	CgroupRoot string
	Sys        sysfs.FS
	// Mode is the host's cgroup layout ("unified", "hybrid", "legacy");
	// iocost is cgroup v2's alone.
	Mode string
}

// DefaultStateDir is where apply keeps a device's lines from before by
// default, in iocost-MAJ_MIN.json.
const DefaultStateDir = "/var/lib/iomatrix"

// Resolve finds where iocost is set for arg, a block device or a path on
// its filesystem: the whole disk (MAJ:MIN; iocost is set per disk, not
// per partition), the host's controller files under the cgroup2 root
// cgroupRoot, with its cgroup mode, and the state file: statePath, or by
// default iocost-MAJ_MIN.json in DefaultStateDir. A sysfs root that is
// not one, or a cgroup2 root that does not exist, is bad input of the
// option "sysfs" or "cgroupfs"; an arg on no block device, of the option
// "device", its message led by arg.
func Resolve(sys sysfs.FS, cgroupRoot, arg, statePath string) (h Host, dev, state string, err error) {
	if err := sys.CheckSys(); err != nil {
		return Host{}, "", "", fault.Input("sysfs", "%w", err)
	}
	if _, err := os.Stat(cgroupRoot); errors.Is(err, fs.ErrNotExist) {
		return Host{}, "", "", fault.Input("cgroupfs", "%s does not exist", cgroupRoot)
	}
	num, _, err := cgroup.ResolveDevice(sys, arg)
	if err != nil {
		return Host{}, "", "", fault.Input("device", "%s: %w", arg, err)
	}
	h = Host{CgroupRoot: cgroupRoot, Sys: sys}
	ctrl, err := cgroup.Detect(sys, cgroupRoot)
	h.Mode = ctrl.Mode.String()
	if err != nil && ctrl.Mode == cgroup.Unavailable {
		h.Mode = "without cgroups"
	}
	dev = num.String()
	if statePath == "" {
		statePath = filepath.Join(DefaultStateDir, "iocost-"+strings.ReplaceAll(dev, ":", "_")+".json")
	}
	return h, dev, statePath, nil
}

// Check refuses, with the reason, what cannot take iocost's lines: a
// host that is not pure cgroup v2, a root without the io controller or
// without io.cost.*, a device that is not blk-mq, a caller that is not
// root.
func (h Host) Check(dev string) error {
	if h.Mode != "unified" {
		return fmt.Errorf("%w: iocost is cgroup v2's, and this host is %s (its io controller is v1 blkio, or absent): use io.max or blkio.throttle caps instead", ErrUnusable, h.Mode)
	}
	data, err := os.ReadFile(filepath.Join(h.CgroupRoot, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(data)), "io") {
		return fmt.Errorf("%w: %s offers no io controller", ErrUnusable, h.CgroupRoot)
	}
	if _, err := os.Stat(filepath.Join(h.CgroupRoot, ModelFile)); err != nil {
		return fmt.Errorf("%w: %s has no %s: the kernel was built without iocost (CONFIG_BLK_CGROUP_IOCOST)", ErrUnusable, h.CgroupRoot, ModelFile)
	}
	num, err := sysfs.ParseDevNum(dev)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	if mq, dir := h.Sys.MultiQueue(num); !mq {
		return fmt.Errorf("%w: device %s is not blk-mq (no %s): iocost needs a multi-queue block device", ErrUnusable, dev, dir)
	}
	if os.Geteuid() != 0 {
		return fault.Privilege("the root's %s and %s are root's to write: run iocost apply as root", ModelFile, QoSFile)
	}
	return nil
}

// Lines reads the device's lines of the root's two files ("" where the
// kernel lists none: iocost was never set up on the device).
func (h Host) Lines(dev string) (model, qos string, err error) {
	if model, err = h.line(ModelFile, dev); err != nil {
		return "", "", err
	}
	qos, err = h.line(QoSFile, dev)
	return model, qos, err
}

func (h Host) line(file, dev string) (string, error) {
	l, err := deviceLine(filepath.Join(h.CgroupRoot, file), dev)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return l, nil
}

// deviceLine is the device's line of a cgroup file keyed by device
// ("MAJ:MIN key=value ..."), "" when the file lists none.
func deviceLine(path, dev string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == dev {
			return strings.TrimSpace(l), nil
		}
	}
	return "", nil
}

func (h Host) write(file, line string) error {
	if err := os.WriteFile(filepath.Join(h.CgroupRoot, file), []byte(line+"\n"), 0); err != nil {
		return fmt.Errorf("write %q to %s: %w", line, file, err)
	}
	return nil
}

// State is what was there before iocost was applied: restored by Reset.
type State struct {
	Device  string `json:"device"`
	SavedAt string `json:"saved_at"`
	// Model and QoS are the lines as the kernel showed them, "" when it
	// showed none.
	Model string `json:"model"`
	QoS   string `json:"qos"`
}

// ReadState reads a state file; a missing one is os.ErrNotExist.
func ReadState(path string) (State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("%s: not a state file of iocost apply: %w", path, err)
	}
	return s, nil
}

// Applied is what Apply wrote and read back.
type Applied struct {
	Before State
	// Kept is set when a state file of an earlier apply was there: the
	// state before that apply is the one kept, so that reset goes back
	// to what was there before iomatrix first touched the device.
	Kept       bool
	Model, QoS string // as read back
}

// CheckLines refuses, as bad input, a model or a QoS (nil: the kernel's
// own) with a value out of the kernel's range, saying which line.
func CheckLines(m Model, q *QoS) error {
	if err := m.Check(); err != nil {
		return fault.Input("", "%s: %w", ModelFile, err)
	}
	if q != nil {
		if err := q.Check(); err != nil {
			return fault.Input("", "%s: %w", QoSFile, err)
		}
	}
	return nil
}

// Shown is a device's line as iomatrix shows it, saying so when the
// kernel lists none.
func Shown(line string) string {
	if line == "" {
		return "(none: iocost was never set up on the device)"
	}
	return line
}

// AutoQoSLine enables iocost with the kernel's own QoS: what Apply writes
// when no QoS was derived.
func AutoQoSLine(dev string) string { return dev + " enable=1 ctrl=auto" }

// Apply saves the device's lines in statePath (unless a state is there
// already), writes the model and the QoS (with q nil, the kernel's own
// QoS, ctrl=auto, enabled), and reads both back: a line that does not
// read back as written is an error.
func (h Host) Apply(dev string, m Model, q *QoS, statePath string) (Applied, error) {
	if err := CheckLines(m, q); err != nil {
		return Applied{}, err
	}
	var a Applied
	if s, err := ReadState(statePath); err == nil {
		if s.Device != dev {
			return Applied{}, fmt.Errorf("%s holds the state of device %s, not %s: %w", statePath, s.Device, dev,
				fault.NewMention(func(n fault.Namer) string { return "give another " + n("state") }))
		}
		a.Before, a.Kept = s, true
	} else if errors.Is(err, os.ErrNotExist) {
		model, qos, err := h.Lines(dev)
		if err != nil {
			return Applied{}, err
		}
		a.Before = State{Device: dev, SavedAt: time.Now().UTC().Format(time.RFC3339), Model: model, QoS: qos}
		data, _ := json.MarshalIndent(a.Before, "", "  ")
		if err := os.MkdirAll(filepath.Dir(statePath), 0o755); err != nil {
			return Applied{}, fmt.Errorf("state: %w", err)
		}
		if err := results.WriteBytesAtomic(statePath, append(data, '\n')); err != nil {
			return Applied{}, fmt.Errorf("save the state before applying: %w", err)
		}
	} else {
		return Applied{}, err
	}
	if err := h.write(ModelFile, m.Line(dev)); err != nil {
		return a, err
	}
	qosLine := AutoQoSLine(dev)
	if q != nil {
		qosLine = q.Line(dev)
	}
	if err := h.write(QoSFile, qosLine); err != nil {
		return a, err
	}
	var err error
	if a.Model, a.QoS, err = h.Lines(dev); err != nil {
		return a, err
	}
	if _, ctrl, got, err := ParseModelLine(a.Model); err != nil || ctrl != "user" || got != m {
		return a, fmt.Errorf("io.cost.model reads back %q, not the model written (%s)", a.Model, m.Line(dev))
	}
	if q != nil && !sameQoS(a.QoS, q.Line(dev)) {
		return a, fmt.Errorf("io.cost.qos reads back %q, not %q", a.QoS, q.Line(dev))
	}
	return a, nil
}

// restoreLine is what to write to restore a saved line. The kernel takes
// any value given as a user's, so a saved ctrl=auto line (the kernel's
// own figures) is restored by ctrl=auto alone (and, for the QoS, whether
// it was enabled); a ctrl=user line by itself. No line saved: the
// kernel's defaults.
func restoreLine(dev, saved string, qos bool) string {
	keys := qosKeys(saved)
	switch {
	case saved == "" && qos:
		return dev + " enable=0 ctrl=auto"
	case saved == "":
		return dev + " ctrl=auto"
	case keys["ctrl"] != "auto":
		return saved
	case qos:
		return dev + " enable=" + keys["enable"] + " ctrl=auto"
	}
	return dev + " ctrl=auto"
}

// sameQoS compares two io.cost.qos lines key by key, as numbers: every
// key of want must read the same in got.
func sameQoS(got, want string) bool { return sameKeys(qosKeys(got), qosKeys(want)) }

func sameKeys(g, w map[string]string) bool {
	if len(g) == 0 {
		return false
	}
	for k, v := range w {
		if g[k] != v {
			return false
		}
	}
	return true
}

// qosKeys are a device line's KEY=VALUE pairs, numbers written alike
// (the kernel prints 95.00 for the 95 it was given).
func qosKeys(line string) map[string]string {
	out := map[string]string{}
	f := strings.Fields(line)
	for _, kv := range f[min(1, len(f)):] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			v = strconv.FormatFloat(n, 'f', -1, 64)
		}
		out[k] = v
	}
	return out
}

// Reset writes back the lines saved before the first apply and removes
// the state file. A device the kernel listed no line for gets the
// kernel's defaults (ctrl=auto, iocost disabled): the kernel keeps a
// device's line once it has one. Restored lines must read back as saved.
func (h Host) Reset(dev, statePath string) (State, string, string, error) {
	s, err := ReadState(statePath)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, "", "", fmt.Errorf("%s: no state saved: iocost apply did not change %s (iocost show tells what is set)", statePath, dev)
	}
	if err != nil {
		return State{}, "", "", err
	}
	if s.Device != dev {
		return State{}, "", "", fmt.Errorf("%s holds the state of device %s, not %s", statePath, s.Device, dev)
	}
	model, qos := restoreLine(dev, s.Model, false), restoreLine(dev, s.QoS, true)
	if err := h.write(QoSFile, qos); err != nil {
		return s, "", "", err
	}
	if err := h.write(ModelFile, model); err != nil {
		return s, "", "", err
	}
	gotModel, gotQoS, err := h.Lines(dev)
	if err != nil {
		return s, "", "", err
	}
	if (s.Model != "" && gotModel != s.Model) || (s.QoS != "" && gotQoS != s.QoS) {
		return s, gotModel, gotQoS, fmt.Errorf("the lines read back differ from those saved:\n  %s\n  %s\nsaved:\n  %s\n  %s", gotModel, gotQoS, s.Model, s.QoS)
	}
	if err := os.Remove(statePath); err != nil {
		return s, gotModel, gotQoS, fmt.Errorf("remove the state %s: %w", statePath, err)
	}
	return s, gotModel, gotQoS, nil
}

// Enabled tells whether iocost is enabled on the device, with its QoS
// line ("" where the kernel lists none).
func (h Host) Enabled(dev string) (bool, string, error) {
	qos, err := h.line(QoSFile, dev)
	if err != nil {
		return false, "", err
	}
	return qosKeys(qos)["enable"] == "1", qos, nil
}

// SetEnabled turns iocost on or off on the device, leaving its QoS and
// model as they are (the kernel keeps every value not named, and whether
// they are a user's), and reads the line back: it must be want's but for
// enable. want is the line as it was before the first switch, so that
// the line ends exactly as found.
func (h Host) SetEnabled(dev string, on bool, want string) error {
	v := "0"
	if on {
		v = "1"
	}
	if err := h.write(QoSFile, dev+" enable="+v); err != nil {
		return err
	}
	got, err := h.line(QoSFile, dev)
	if err != nil {
		return err
	}
	w, g := qosKeys(want), qosKeys(got)
	w["enable"] = v
	if len(g) != len(w) || !sameKeys(g, w) {
		return fmt.Errorf("%s reads %q after enable=%s, from %q", QoSFile, got, v, want)
	}
	return nil
}
