package observe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// deviceCounters is a diskstats line as the device layout's counters, in
// the kernel's own units (sectors, not bytes: a wrap is the kernel's
// counter's); deviceScale turns an increase into the layout's units.
func deviceCounters(st sysfs.DiskStats) []uint64 {
	return []uint64{st.ReadIOs, st.WriteIOs, st.ReadSectors, st.WriteSectors, st.ReadMerges, st.WriteMerges,
		st.ReadTicksMs, st.WriteTicksMs, st.IOTicksMs, st.TimeInQueueMs,
		st.DiscardIOs, st.DiscardSectors, st.DiscardTicksMs, st.FlushIOs, st.FlushTicksMs}
}

var deviceScale = []uint64{1, 1, 512, 512, 1, 1, 1, 1, 1, 1, 1, 512, 1, 1, 1}

// DeviceSelection says which lines of /proc/diskstats are observed.
type DeviceSelection struct {
	// Named devices (kernel names, /dev paths or MAJ:MIN), resolved by
	// ResolveDevices; when empty, every real disk: a whole disk with a
	// device behind it, no partition, and nothing virtual (loop, zram,
	// device-mapper and md stack on other disks, whose I/O would then be
	// counted twice).
	Named []sysfs.DevNum
	// All takes every whole device, virtual ones included; Partitions
	// takes partitions too.
	All, Partitions bool
}

// selector decides, line by line, whether a device is observed; what it
// learns of a device from sysfs it keeps, by number and name (a number
// given to another device is asked again).
type selector struct {
	sys   sysfs.FS
	sel   DeviceSelection
	known map[sysfs.DevNum]selected
}

type selected struct {
	name string
	take bool
}

func (s *selector) take(dev sysfs.DevNum, name string) bool {
	if len(s.sel.Named) > 0 {
		return slices.Contains(s.sel.Named, dev)
	}
	if k, ok := s.known[dev]; ok && k.name == name {
		return k.take
	}
	take := s.judge(name)
	s.known[dev] = selected{name, take}
	return take
}

func (s *selector) judge(name string) bool {
	if s.sys.IsPartition(name) && !s.sel.Partitions {
		return false
	}
	if s.sel.All {
		return true
	}
	virtual, err := s.sys.IsVirtual(name)
	return err == nil && !virtual
}

// ResolveDevices turns device arguments (kernel names such as "vda",
// /dev paths, or MAJ:MIN) into numbers; each must be a block device
// /proc/diskstats lists now.
func ResolveDevices(fs sysfs.FS, args []string) ([]sysfs.DevNum, error) {
	_, names, err := fs.AllDiskStats()
	if err != nil {
		return nil, fmt.Errorf("read diskstats: %w", err)
	}
	byName := map[string]sysfs.DevNum{}
	for d, n := range names {
		byName[n] = d
	}
	var out []sysfs.DevNum
	for _, a := range args {
		dev, err := resolveDevice(byName, a)
		if err != nil {
			return nil, err
		}
		if _, ok := names[dev]; !ok {
			return nil, &DeviceError{Arg: a, Why: fmt.Sprintf("%s is not in /proc/diskstats", dev)}
		}
		if i := slices.Index(out, dev); i >= 0 {
			return nil, &DeviceError{Arg: a, Why: fmt.Sprintf("given twice: the same device as %s (%s)", args[i], dev)}
		}
		out = append(out, dev)
	}
	return out, nil
}

func resolveDevice(byName map[string]sysfs.DevNum, a string) (sysfs.DevNum, error) {
	if d, ok := byName[strings.TrimPrefix(a, "/dev/")]; ok && !strings.Contains(strings.TrimPrefix(a, "/dev/"), "/") {
		return d, nil
	}
	if d, err := sysfs.ParseDevNum(a); err == nil {
		return d, nil
	}
	if strings.HasPrefix(a, "/") {
		var st syscall.Stat_t
		if err := syscall.Stat(a, &st); err != nil {
			return sysfs.DevNum{}, &DeviceError{Arg: a, Why: err.Error()}
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFBLK {
			return sysfs.DevNum{}, &DeviceError{Arg: a, Why: "not a block device (observe takes disks: name one as vda, /dev/vda or 254:0)"}
		}
		return sysfs.DevNum{Major: uint32(st.Rdev >> 8 & 0xfff), Minor: uint32(st.Rdev&0xff | st.Rdev>>12&0xfff00)}, nil
	}
	return sysfs.DevNum{}, &DeviceError{Arg: a, Why: "no such device in /proc/diskstats (a kernel name such as vda, a /dev path, or MAJ:MIN)"}
}

// DeviceError is a device argument that names no device.
type DeviceError struct{ Arg, Why string }

func (e *DeviceError) Error() string { return fmt.Sprintf("device %s: %s", e.Arg, e.Why) }

// Cgroups: a system is a cgroup, read through the controller's files.

// CgroupSpec names a cgroup to observe as a system. Path is below the
// controller's hierarchy root.
type CgroupSpec struct {
	Path, Name string
}

// ParseCgroupSpec parses PATH[=NAME]: PATH below the hierarchy root, or
// absolute under it; NAME defaults to what the path tells (the unit,
// container or pod).
func ParseCgroupSpec(ctrl cgroup.Controller, s string) (CgroupSpec, error) {
	path, name, _ := strings.Cut(s, "=")
	if path == "" {
		return CgroupSpec{}, fmt.Errorf("%q: want PATH[=NAME]", s)
	}
	if filepath.IsAbs(path) {
		if rel, err := filepath.Rel(ctrl.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
	}
	path = "/" + strings.Trim(filepath.Clean("/"+path), "/")
	if name == "" {
		name = SystemName(path)
	}
	if err := results.CheckName(name); err != nil {
		return CgroupSpec{}, fmt.Errorf("%q: NAME %w", s, err)
	}
	return CgroupSpec{Path: path, Name: name}, nil
}

var (
	containerID = regexp.MustCompile(`^(?:(libpod|docker|cri-containerd|crio|containerd)-)?([0-9a-f]{64})(?:\.scope)?$`)
	podUID      = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?$`)
)

// SystemName is what a cgroup's path tells of what runs in it: a
// systemd unit's name ("mariadb.service"), a container's runtime and
// short id ("libpod-0123456789ab"), a pod's uid and its container
// ("pod-1b2c3d4e/0123456789ab"), or else the path's last element.
func SystemName(path string) string {
	elems := strings.Split(strings.Trim(path, "/"), "/")
	if len(elems) > 1 && elems[len(elems)-1] == "container" {
		// podman under systemd runs the container in libpod-ID.scope/container.
		elems = elems[:len(elems)-1]
	}
	last := elems[len(elems)-1]
	if last == "" {
		return "root"
	}
	ctr := ""
	if m := containerID.FindStringSubmatch(last); m != nil {
		ctr = m[2][:12]
		if m[1] != "" {
			ctr = m[1] + "-" + ctr
		}
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if m := podUID.FindStringSubmatch(elems[i]); m != nil {
			pod := "pod-" + m[1][:8]
			switch {
			case i == len(elems)-1:
				return pod
			case ctr != "":
				return pod + "/" + strings.TrimPrefix(strings.TrimPrefix(ctr, "cri-containerd-"), "crio-")
			default:
				return pod + "/" + last
			}
		}
	}
	if ctr != "" {
		return ctr
	}
	return last
}

// AutoRoots are the subtrees --cgroups auto looks in: systemd's
// services and machines, Kubernetes' pods, and the cgroupfs parents of
// podman and docker.
var AutoRoots = []string{"system.slice", "machine.slice", "kubepods*", "libpod_parent", "docker"}

// Discover lists the leaf cgroups below the auto roots of a hierarchy:
// services, scopes and containers, each named by SystemName (names made
// unique by their path's parent where two coincide).
func Discover(dir string) ([]CgroupSpec, error) {
	var out []CgroupSpec
	for _, pat := range AutoRoots {
		roots, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		for _, r := range roots {
			if err := leaves(dir, r, &out); err != nil {
				return nil, err
			}
		}
	}
	seen := map[string]int{}
	for _, s := range out {
		seen[s.Name]++
	}
	for i, s := range out {
		if seen[s.Name] > 1 {
			out[i].Name = strings.TrimPrefix(filepath.Base(filepath.Dir(s.Path)), "/") + "/" + s.Name
		}
	}
	return out, nil
}

func leaves(root, dir string, out *[]CgroupSpec) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // went meanwhile
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	leaf := true
	for _, e := range entries {
		if e.IsDir() {
			leaf = false
			if err := leaves(root, filepath.Join(dir, e.Name()), out); err != nil {
				return err
			}
		}
	}
	if leaf {
		rel, _ := filepath.Rel(root, dir)
		path := "/" + rel
		*out = append(*out, CgroupSpec{Path: path, Name: SystemName(path)})
	}
	return nil
}

// cgroupReader reads one cgroup's I/O counters by device.
type cgroupReader struct {
	ctrl cgroup.Controller
	dir  string // the cgroup's directory
}

// read gives the cgroup's counters by device and its identity (the
// directory's inode, which a cgroup created again under the same path
// does not keep). A cgroup that is gone gives os.ErrNotExist.
func (r cgroupReader) read() (map[sysfs.DevNum]cgroup.Counters, string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(r.dir, &st); err != nil {
		return nil, "", &os.PathError{Op: "stat", Path: r.dir, Err: err}
	}
	id := "inode " + strconv.FormatUint(st.Ino, 10)
	if r.ctrl.Version == 2 {
		data, err := os.ReadFile(filepath.Join(r.dir, "io.stat"))
		if err != nil {
			return nil, id, err
		}
		m, err := cgroup.ParseIOStat(bytes.NewReader(data))
		if err != nil {
			return nil, id, fmt.Errorf("%s: %w", filepath.Join(r.dir, "io.stat"), err)
		}
		return m, id, nil
	}
	ios, err := r.v1("blkio.throttle.io_serviced")
	if err != nil {
		return nil, id, err
	}
	byts, err := r.v1("blkio.throttle.io_service_bytes")
	if err != nil {
		return nil, id, err
	}
	out := map[sysfs.DevNum]cgroup.Counters{}
	for d, o := range ios {
		b := byts[d]
		out[d] = cgroup.Counters{ReadIOs: o.Read, WriteIOs: o.Write, DiscardIOs: o.Discard,
			ReadBytes: b.Read, WriteBytes: b.Write, DiscardBytes: b.Discard}
	}
	return out, id, nil
}

// v1 reads a v1 statistic, the recursive form where the kernel has it:
// v2's io.stat counts a cgroup's descendants too, and a named slice
// should mean the same on both.
func (r cgroupReader) v1(name string) (map[sysfs.DevNum]cgroup.V1Ops, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, name+"_recursive"))
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join(r.dir, name))
	}
	if err != nil {
		return nil, err
	}
	m, err := cgroup.ParseV1Serviced(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(r.dir, name), err)
	}
	return m, nil
}

// exists tells whether the cgroup's directory is there.
func (r cgroupReader) exists() bool {
	_, err := os.Stat(r.dir)
	return err == nil
}

// pressure reads the cgroup's io.pressure: v2 keeps one per cgroup
// (unless PSI is disabled, at boot or by its cgroup.pressure); v1 none.
// Where there is none the error wraps sysfs.ErrNoPressure.
func (r cgroupReader) pressure() (sysfs.Pressure, error) {
	if r.ctrl.Version != 2 {
		return sysfs.Pressure{}, fmt.Errorf("%w: cgroup v%d keeps no pressure per cgroup", sysfs.ErrNoPressure, r.ctrl.Version)
	}
	return sysfs.ReadPressure(filepath.Join(r.dir, "io.pressure"))
}

// stallCounters are a pressure reading as a layout's stall counters,
// the some stall and, where the layout has it, the full one.
func stallCounters(p sysfs.Pressure, full bool) []uint64 {
	if full {
		return []uint64{p.Some.TotalUS, p.Full.TotalUS}
	}
	return []uint64{p.Some.TotalUS}
}

func cgroupCounters(c cgroup.Counters) []uint64 {
	return []uint64{c.ReadIOs, c.WriteIOs, c.ReadBytes, c.WriteBytes, c.DiscardIOs, c.DiscardBytes}
}

// writeback says where a cgroup's buffered writeback is charged: to it
// only on v2 with the memory controller enabled for it (cgroup
// writeback needs both io and memory); to the root otherwise.
func writeback(ctrl cgroup.Controller, dir string) string {
	if ctrl.Version != 2 {
		return "root"
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err == nil && slices.Contains(strings.Fields(string(data)), "memory") && slices.Contains(strings.Fields(string(data)), "io") {
		return "cgroup"
	}
	return "root"
}
