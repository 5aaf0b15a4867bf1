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
	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Parent is the directory, under the controller's root, that holds every
// cgroup iomatrix creates.
const Parent = "iomatrix"

var groupSeq atomic.Int64

// Group is a cgroup with I/O limits on one device.
type Group struct {
	ctrl  Controller
	Name  string // relative to the controller root, e.g. "iomatrix/1234-1"
	Path  string // absolute directory
	Limit Limit
	owned bool // created by this process: Delete removes it
}

// Create makes a fresh cgroup named iomatrix/<pid>-<n> under the
// controller, applies l through containerd/cgroups, and reads the limits
// back: the kernel must have taken them as planned.
func Create(ctrl Controller, l Limit) (*Group, error) {
	name := fmt.Sprintf("%s/%d-%d", Parent, os.Getpid(), groupSeq.Add(1))
	g := &Group{ctrl: ctrl, Name: name, Path: filepath.Join(ctrl.Dir, name), Limit: l, owned: true}
	var err error
	switch ctrl.Version {
	case 1:
		_, err = cgroup1.New(cgroup1.StaticPath("/"+name), l.v1Resources(), cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) {
			return []cgroup1.Subsystem{cgroup1.NewBlkio(ctrl.Root)}, nil
		}))
	case 2:
		// containerd creates the group and enables io in its ancestors;
		// the plan is then one write of one line, every key at once, so
		// the group never runs with half a limit.
		_, err = cgroup2.NewManager(ctrl.Dir, "/"+name, &cgroup2.Resources{IO: &cgroup2.IO{}})
		if err == nil {
			err = os.WriteFile(filepath.Join(g.Path, "io.max"), []byte(l.String()+"\n"), 0o644)
		}
	default:
		err = ErrNoIOController
	}
	if err != nil {
		os.Remove(g.Path)
		return nil, fmt.Errorf("create cgroup %s: %w", g.Path, err)
	}
	got, err := g.Limits()
	if err != nil || got != l {
		g.Delete()
		if err == nil {
			err = fmt.Errorf("the kernel holds %s, not %s", got, l)
		}
		return nil, fmt.Errorf("apply cap to %s: %w", g.Path, err)
	}
	return g, nil
}

// Join uses an existing cgroup (a container's, say) and reads the limits
// configured on dev in it. It is never deleted by iomatrix.
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
	g := &Group{ctrl: ctrl, Name: rel, Path: abs}
	all, err := g.allLimits()
	if err != nil {
		return nil, err
	}
	g.Limit = all[dev]
	g.Limit.Device = dev
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
	if err := os.WriteFile(filepath.Join(g.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move pid %d into %s: %w", pid, g.Path, err)
	}
	return nil
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
		m, err := parseIOStat(f)
		return m[g.Limit.Device], err
	}
	read := func(file string) ([2]uint64, error) {
		f, err := os.Open(filepath.Join(g.Path, file))
		if err != nil {
			return [2]uint64{}, err
		}
		defer f.Close()
		m, err := parseV1Serviced(f)
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
	return Counters{ReadIOs: ios[0], WriteIOs: ios[1], ReadBytes: bytes[0], WriteBytes: bytes[1]}, nil
}

// Delete removes a group this process created, waiting briefly for exiting
// members to leave (the kernel refuses to remove a cgroup with tasks).
// Joined groups are left alone.
func (g *Group) Delete() error {
	if !g.owned {
		return nil
	}
	var err error
	for range 50 {
		err = os.Remove(g.Path)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			// The shared parent goes too once no run uses it; another
			// run's group keeps it (the removal then fails harmlessly).
			os.Remove(filepath.Dir(g.Path))
			return nil
		}
		if !errors.Is(err, syscallEBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", g.Path, err)
}

// Cleanup removes cgroups left under iomatrix/ by processes that are gone
// (SIGKILLed): only those whose owner pid no longer exists and that hold
// no task. It returns the paths it removed.
func Cleanup(ctrl Controller) ([]string, error) {
	dir := filepath.Join(ctrl.Dir, Parent)
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
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // its owner still runs
		}
		path := filepath.Join(dir, e.Name())
		if procs, _ := os.ReadFile(filepath.Join(path, "cgroup.procs")); strings.TrimSpace(string(procs)) != "" {
			continue
		}
		if err := os.Remove(path); err != nil {
			return removed, err // an *os.PathError: it names the path
		}
		removed = append(removed, path)
	}
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
