package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Parent is the directory, under the controller's root, that holds every
// cgroup iomatrix creates.
const Parent = "iomatrix"

var groupSeq atomic.Int64

// Group is a cgroup with I/O limits on one device.
type Group struct {
	ctrl Controller
	Name string // relative to the controller root, e.g. "iomatrix/1234-1"
	Path string // absolute directory
	// Limit is the limit in force on the device: for a joined group the
	// strictest along its path, since a cgroup's ancestors' limits apply
	// to it too. Own is what the group itself sets; From names, per key
	// of Limit that an ancestor sets, that ancestor.
	Limit Limit
	Own   Limit
	From  map[string]string
	owned bool // created by this process: Delete removes it
	place Place
	leaf  string // this process's leaf in a delegated place
}

// Create makes a fresh cgroup named <pid>-<n> in the iomatrix directory of
// the controller's Placement, enables the controllers there (v2), applies
// l, and reads the limits back: the kernel must have taken them as
// planned.
func Create(ctrl Controller, l Limit) (*Group, error) {
	place, err := ctrl.Placement()
	if err != nil {
		return nil, err
	}
	g := &Group{ctrl: ctrl, Limit: l, Own: l, owned: true, place: place}
	unlock, err := lockPlace(place)
	if err != nil {
		return nil, err
	}
	g.leaf, err = ctrl.prepare(place)
	if err != nil {
		g.undo()
		unlock()
		return nil, err
	}
	name := fmt.Sprintf("%d-%d", os.Getpid(), groupSeq.Add(1))
	g.Path = filepath.Join(place.Base(), name)
	g.Name, _ = filepath.Rel(ctrl.Dir, g.Path)
	err = os.Mkdir(g.Path, 0o755)
	unlock()
	if err == nil {
		err = g.apply()
	}
	if err != nil {
		_ = g.remove() // best effort: the error returned says what failed
		return nil, fmt.Errorf("create cgroup %s: %w", g.Path, err)
	}
	if !g.limited() {
		return g, nil
	}
	got, err := g.Limits()
	if err != nil || got != l {
		_ = g.Delete() // best effort: the error returned says what failed
		if err == nil {
			err = fmt.Errorf("the kernel holds %s, not %s", got, l)
		}
		return nil, fmt.Errorf("apply cap to %s: %w", g.Path, err)
	}
	return g, nil
}

// limited tells whether the group's controller takes I/O limits: blkio
// and io do; the stand-ins of the tests do not.
func (g *Group) limited() bool { return g.ctrl.Name == "blkio" || g.ctrl.Name == "io" }

// apply writes the limits, every key at once, so the group never runs
// with half a limit.
func (g *Group) apply() error {
	switch {
	case !g.limited():
		return nil
	case g.ctrl.Version == 1:
		_, err := cgroup1.New(cgroup1.StaticPath("/"+g.Name), g.Limit.v1Resources(), cgroup1.WithHierarchy(g.v1Hierarchy))
		return err
	}
	file := filepath.Join(g.Path, "io.max")
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s has no io.max", ErrNoThrottling, g.Path)
	}
	return os.WriteFile(file, []byte(g.Limit.String()+"\n"), 0o644)
}

func (g *Group) v1Hierarchy() ([]cgroup1.Subsystem, error) {
	return []cgroup1.Subsystem{cgroup1.NewBlkio(g.ctrl.Root)}, nil
}

// remove removes the group's directory and, once no run uses it, the
// shared iomatrix directory, holding the place's lock.
func (g *Group) remove() error {
	unlock, err := lockPlace(g.place)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(g.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	g.undo()
	return nil
}

// undo removes what prepare made, once the group is gone or could not be
// made; what it cannot undo stays for `cap cleanup` (a leaf of a process
// that has ended), so there is no one to tell here.
func (g *Group) undo() {
	if g.place.Delegated {
		_ = g.ctrl.unprepare(g.place, g.leaf)
		return
	}
	g.ctrl.release(g.place)
}

// Join uses an existing cgroup (a container's, say) and reads the limits
// in force on dev there: on v2 its own and its ancestors', the strictest
// of each; on v1, where throttling is flat, its own. It is never deleted by iomatrix. On v2 a cgroup that enables
// controllers for its children cannot take processes (the
// no-internal-process rule): it is refused, with the rule named.
func Join(ctrl Controller, path string, dev sysfs.DevNum) (*Group, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ctrl.Dir, path)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("cgroup %s: not a cgroup directory under %s", path, ctrl.Dir)
	}
	rel, err := filepath.Rel(ctrl.Dir, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("cgroup %s is not below the I/O controller's root %s", path, ctrl.Dir)
	}
	if ctrl.Version == 2 && !isRealRoot(abs) {
		if on, _ := readList(filepath.Join(abs, "cgroup.subtree_control")); len(on) > 0 {
			return nil, fmt.Errorf("%w: cgroup %s enables %s for its children, so no process may join it; give a leaf cgroup (one of its children, or a new one)",
				ErrInternalProcess, abs, strings.Join(on, " "))
		}
	}
	g := &Group{ctrl: ctrl, Name: rel, Path: abs, From: map[string]string{}}
	own, err := g.allLimits()
	if err != nil {
		return nil, err
	}
	g.Own = own[dev]
	g.Own.Device = dev
	g.Limit = g.Own
	// Only v2 throttles hierarchically: on v1 every cgroup's limits are
	// its own (blk-throttle keeps the flat behaviour there).
	for dir := filepath.Dir(abs); ctrl.Version == 2 && strings.HasPrefix(dir, ctrl.Dir) && dir != abs; dir = filepath.Dir(dir) {
		up := &Group{ctrl: ctrl, Path: dir}
		if all, err := up.allLimits(); err == nil {
			g.Limit.tighten(all[dev], dir, g.From)
		}
		if dir == ctrl.Dir {
			break
		}
	}
	return g, nil
}

// Version is the cgroup version of the group.
func (g *Group) Version() int { return g.ctrl.Version }

// Limits reads back the group's limits on its device.
func (g *Group) Limits() (Limit, error) {
	all, err := g.allLimits()
	if err != nil {
		return Limit{}, err
	}
	l := all[g.Limit.Device]
	l.Device = g.Limit.Device
	return l, nil
}

func (g *Group) allLimits() (map[sysfs.DevNum]Limit, error) {
	if g.ctrl.Version == 2 {
		f, err := os.Open(filepath.Join(g.Path, "io.max"))
		if err != nil {
			return nil, fmt.Errorf("read limits: %w", err)
		}
		defer f.Close()
		return ParseIOMax(f)
	}
	out := map[sysfs.DevNum]Limit{}
	for _, x := range []struct {
		file string
		set  func(*Limit, uint64)
	}{
		{"blkio.throttle.read_iops_device", func(l *Limit, v uint64) { l.ReadIOPS = v }},
		{"blkio.throttle.write_iops_device", func(l *Limit, v uint64) { l.WriteIOPS = v }},
		{"blkio.throttle.read_bps_device", func(l *Limit, v uint64) { l.ReadBPS = v }},
		{"blkio.throttle.write_bps_device", func(l *Limit, v uint64) { l.WriteBPS = v }},
	} {
		f, err := os.Open(filepath.Join(g.Path, x.file))
		if err != nil {
			return nil, fmt.Errorf("read limits: %w", err)
		}
		rates, err := parseV1Throttle(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.file, err)
		}
		for dev, v := range rates {
			l := out[dev]
			l.Device = dev
			x.set(&l, v)
			out[dev] = l
		}
	}
	return out, nil
}

// AddProc moves a process into the group.
func (g *Group) AddProc(pid int) error {
	err := os.WriteFile(filepath.Join(g.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	switch {
	case err == nil:
		return nil
	case g.ctrl.Version == 2 && errors.Is(err, unix.EBUSY):
		return fmt.Errorf("move pid %d into %s: %w: the cgroup enables controllers for its children", pid, g.Path, ErrInternalProcess)
	}
	return fmt.Errorf("move pid %d into %s: %w", pid, g.Path, err)
}

// Counters reads the I/Os the kernel has counted for the group on its
// device. On v1 the kernel keeps them only while a throttle rule exists on
// the device.
func (g *Group) Counters() (Counters, error) {
	if g.ctrl.Version == 2 {
		f, err := os.Open(filepath.Join(g.Path, "io.stat"))
		if err != nil {
			return Counters{}, err
		}
		defer f.Close()
		m, err := ParseIOStat(f)
		c := m[g.Limit.Device]
		c.DiscardIOs, c.DiscardBytes = 0, 0 // a verdict compares reads and writes
		return c, err
	}
	read := func(file string) (V1Ops, error) {
		f, err := os.Open(filepath.Join(g.Path, file))
		if err != nil {
			return V1Ops{}, err
		}
		defer f.Close()
		m, err := ParseV1Serviced(f)
		return m[g.Limit.Device], err
	}
	ios, err := read("blkio.throttle.io_serviced")
	if err != nil {
		return Counters{}, err
	}
	bytes, err := read("blkio.throttle.io_service_bytes")
	if err != nil {
		return Counters{}, err
	}
	return Counters{ReadIOs: ios.Read, WriteIOs: ios.Write, ReadBytes: bytes.Read, WriteBytes: bytes.Write}, nil
}

// Delete removes a group this process created, waiting briefly for exiting
// members to leave (the kernel refuses to remove a cgroup with tasks), and
// the shared iomatrix directory when no other run uses it. Joined groups
// are left alone.
func (g *Group) Delete() error {
	if !g.owned {
		return nil
	}
	var err error
	for range 50 {
		if err = g.remove(); err == nil {
			return nil
		}
		if !errors.Is(err, syscallEBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is said once
	}
	if procs, _ := readProcs(g.Path); len(procs) > 0 {
		return fmt.Errorf("cgroup %s cannot be removed: %d process(es) still in it (pid %d…) and still capped (%w); `iomatrix cap cleanup` removes it once they are gone",
			g.Path, len(procs), procs[0], err)
	}
	return fmt.Errorf("remove cgroup %s: %w", g.Path, err)
}

// Cleanup removes cgroups left by processes that are gone (SIGKILLed): in
// the iomatrix directory of the controller's placement, only those whose
// owner pid no longer exists in sys and that hold no task. It returns
// the paths it removed.
func Cleanup(sys sysfs.FS, ctrl Controller) ([]string, error) {
	places := []Place{{Dir: ctrl.Dir}}
	if p, err := ctrl.Placement(); err == nil && p.Dir != ctrl.Dir {
		places = append(places, p)
	}
	var removed []string
	for _, p := range places {
		unlock, err := lockPlace(p)
		if err != nil {
			return removed, err
		}
		r, err := cleanupDir(sys, p.Base())
		if err == nil && !p.Delegated {
			// The last cgroup gone: what iomatrix enabled goes too, as at
			// the end of a run.
			ctrl.release(p)
		}
		unlock()
		removed = append(removed, r...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

func cleanupDir(sys sysfs.FS, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 {
			continue // not one of ours
		}
		if sys.ProcessExists(pid) {
			continue // its owner still runs
		}
		path := filepath.Join(dir, e.Name())
		if procs, _ := readProcs(path); len(procs) > 0 {
			continue
		}
		if err := os.Remove(path); err != nil {
			return removed, err // an *os.PathError: it names the path
		}
		removed = append(removed, path)
	}
	removeShared(dir)
	return removed, nil
}

// Configured is a limit found on the host.
type Configured struct {
	Cgroup string // relative to the controller's root; "" is the root
	Limit  Limit
}

// Show lists every I/O limit configured under the controller (v1 throttle
// files or v2 io.max), optionally only those on dev.
func Show(ctrl Controller, dev *sysfs.DevNum) ([]Configured, error) {
	var out []Configured
	err := filepath.WalkDir(ctrl.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(ctrl.Dir, path)
		if rel == "." {
			rel = ""
		}
		g := &Group{ctrl: ctrl, Path: path}
		all, err := g.allLimits()
		if err != nil {
			return nil // the v2 root has no io.max; skip what cannot be read
		}
		for _, d := range sortedDevs(all) {
			l := all[d]
			if l.Empty() || (dev != nil && d != *dev) {
				continue
			}
			out = append(out, Configured{Cgroup: rel, Limit: l})
		}
		return nil
	})
	return out, err
}

// SetLimit replaces the limits the group sets on its device with l (a
// zero key lifts that limit) and reads them back: the kernel must hold l.
// On a joined group the limits in force may still be an ancestor's.
func (g *Group) SetLimit(l Limit) error {
	l.Device = g.Limit.Device
	old, oldOwn := g.Limit, g.Own
	g.Limit, g.Own = l, l
	var err error
	switch {
	case !g.limited():
		return nil
	case g.ctrl.Version == 1:
		err = g.writeV1(l)
	default:
		err = g.apply()
	}
	if err == nil {
		var got Limit
		if got, err = g.Limits(); err == nil && got != l {
			err = fmt.Errorf("the kernel holds %s, not %s", got, l)
		}
	}
	if err != nil {
		g.Limit, g.Own = old, oldOwn
		return fmt.Errorf("set the limits of %s: %w", g.Path, err)
	}
	return nil
}

// writeV1 writes every blkio throttle file of the device, 0 where l sets
// nothing (which removes the rule).
func (g *Group) writeV1(l Limit) error {
	for _, k := range []struct {
		file string
		v    uint64
	}{
		{"blkio.throttle.read_iops_device", l.ReadIOPS}, {"blkio.throttle.write_iops_device", l.WriteIOPS},
		{"blkio.throttle.read_bps_device", l.ReadBPS}, {"blkio.throttle.write_bps_device", l.WriteBPS},
	} {
		if err := os.WriteFile(filepath.Join(g.Path, k.file), []byte(fmt.Sprintf("%s %d", l.Device, k.v)), 0); err != nil {
			return err
		}
	}
	return nil
}

// The range of io.weight (Documentation/admin-guide/cgroup-v2.rst).
const (
	MinWeight     = 1
	MaxWeight     = 10000
	DefaultWeight = 100
)

// SetWeight sets the group's default io.weight, the share of its
// parent's device time the kernel's proportional controller (iocost)
// gives it among its siblings, and reads it back. cgroup v2 only, and
// only where the kernel has iocost (the file io.weight).
func (g *Group) SetWeight(w int) error {
	if g.ctrl.Version != 2 || g.ctrl.Name != "io" {
		return fmt.Errorf("set io.weight of %s: %w: io.weight is cgroup v2's io controller's", g.Path, ErrControllerMissing)
	}
	if w < MinWeight || w > MaxWeight {
		return fmt.Errorf("set io.weight of %s: %d is outside %d–%d", g.Path, w, MinWeight, MaxWeight)
	}
	file := filepath.Join(g.Path, "io.weight")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("default %d\n", w)), 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("set io.weight of %s: the kernel has no io.weight here (built without iocost?): %w", g.Path, err)
		}
		return fmt.Errorf("set io.weight of %s: %w", g.Path, err)
	}
	got, err := g.Weight()
	if err == nil && got != w {
		err = fmt.Errorf("the kernel holds weight %d, not %d", got, w)
	}
	if err != nil {
		return fmt.Errorf("set io.weight of %s: %w", g.Path, err)
	}
	return nil
}

// Weight reads the group's default io.weight.
func (g *Group) Weight() (int, error) {
	data, err := os.ReadFile(filepath.Join(g.Path, "io.weight"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "default" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("%s: no default weight in %q", filepath.Join(g.Path, "io.weight"), data)
}
