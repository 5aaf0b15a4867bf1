package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Where iomatrix's cgroups live on cgroup v2, and why.
//
// The kernel's rule that matters is the no-internal-process rule
// (Documentation/admin-guide/cgroup-v2.rst): a cgroup other than the real
// root may enable a domain controller such as io for its children only
// while it holds no process, and no process may join a cgroup that has
// one enabled for its children. So:
//
//   - This process's own cgroup, when it is delegated to it (systemd marks
//     such a cgroup with the xattr trusted.delegate or user.delegate, as
//     `systemd-run --scope -p Delegate=yes` or a Delegate=yes unit do):
//     iomatrix stays inside its unit. It moves itself into a leaf of its
//     own first, as systemd's delegation rules ask, and the cgroups go
//     below.
//   - Otherwise the root of the hierarchy this process sees: the real root
//     on a plain host (exempt from the rule), or the root of a cgroup
//     namespace (a container), which works only when that root holds no
//     process or already has the controller enabled for its children.
//     Anything else is refused before any I/O, with the rule named.
//
// The controllers are parameters: "io" in use, "hugetlb" in the tests,
// which run these mechanics on this project's machines' real v2 hierarchy,
// where io is not available but the kernel enforces the same rules.

// Errors of the v2 tree. ErrInternalProcess and ErrControllerMissing are
// properties of the host (exit status 2); permission problems wrap
// fs.ErrPermission or EROFS (exit status 4).
var (
	ErrInternalProcess   = errors.New("the no-internal-process rule of cgroup v2 forbids it")
	ErrControllerMissing = errors.New("controller not available")
	ErrNoThrottling      = errors.New("the kernel has no I/O throttling (CONFIG_BLK_DEV_THROTTLING)")
)

// Place is where a controller's iomatrix cgroups live.
type Place struct {
	// Dir holds the iomatrix directory: the hierarchy's root, or this
	// process's own delegated cgroup.
	Dir string
	// Delegated is set when Dir is this process's delegated cgroup: the
	// process moves into a leaf below it before enabling controllers.
	Delegated bool
}

// Base is the directory that holds the cgroups themselves.
func (p Place) Base() string { return filepath.Join(p.Dir, Parent) }

// Placement decides where the controller's cgroups go, checking without
// changing anything that they can be made there: the controller is
// available, the tree is writable, and the no-internal-process rule allows
// it. v1 hierarchies have no such rule: their cgroups go below the root.
func (c Controller) Placement() (Place, error) {
	if c.Version != 2 {
		return Place{Dir: c.Dir}, writable(c.Dir)
	}
	self := filepath.Join(c.Dir, c.Self)
	if c.Self != "" && c.Self != "/" && delegated(self) {
		if err := c.available(self); err != nil {
			return Place{}, err
		}
		return Place{Dir: self, Delegated: true}, writable(self)
	}
	if err := c.available(c.Dir); err != nil {
		return Place{}, err
	}
	if err := writable(c.Dir); err != nil {
		return Place{}, err
	}
	if isRealRoot(c.Dir) {
		return Place{Dir: c.Dir}, nil
	}
	// The root of a cgroup namespace (or a mount of a subtree): the rule
	// applies to it as to any other cgroup.
	if missing := c.notEnabled(c.Dir, c.controllers()); len(missing) > 0 {
		if procs, _ := readProcs(c.Dir); len(procs) > 0 {
			return Place{}, internalProcessError(c.Dir, missing, procs)
		}
	}
	return Place{Dir: c.Dir}, nil
}

// controllers are those iomatrix enables: its own, and Extra where the
// hierarchy offers them.
func (c Controller) controllers() []string {
	return append([]string{c.Name}, c.Extra...)
}

// available checks that dir's children can have the controller: it is
// listed in dir's cgroup.controllers.
func (c Controller) available(dir string) error {
	have, err := readList(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if !slices.Contains(have, c.Name) {
		return fmt.Errorf("%w: the %s controller is not available in cgroup %s (it offers %q): the host has not delegated it here",
			ErrControllerMissing, c.Name, dir, strings.Join(have, " "))
	}
	return nil
}

// notEnabled lists the controllers of want that dir does not enable for
// its children.
func (c Controller) notEnabled(dir string, want []string) []string {
	on, _ := readList(filepath.Join(dir, "cgroup.subtree_control"))
	var missing []string
	for _, w := range want {
		if !slices.Contains(on, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

// enable turns on want for dir's children, those dir offers only (Extra
// may be absent: the caller checks what it needs).
func (c Controller) enable(dir string, want []string) error {
	have, _ := readList(filepath.Join(dir, "cgroup.controllers"))
	var add []string
	for _, w := range c.notEnabled(dir, want) {
		if slices.Contains(have, w) || w == c.Name {
			add = append(add, "+"+w)
		}
	}
	if len(add) == 0 {
		return nil
	}
	file := filepath.Join(dir, "cgroup.subtree_control")
	err := os.WriteFile(file, []byte(strings.Join(add, " ")), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EBUSY):
		procs, _ := readProcs(dir)
		return internalProcessError(dir, add, procs)
	case errors.Is(err, unix.ENOENT):
		if _, serr := os.Stat(dir); serr != nil {
			return serr // the directory went: a concurrent run removed it
		}
		// The file exists: the kernel says a controller is not offered.
		return fmt.Errorf("%w: enable %s in %s: %w", ErrControllerMissing, strings.Join(add, " "), dir, err)
	}
	return fmt.Errorf("enable %s for the children of %s: %w", strings.Join(add, " "), dir, err)
}

// Enabled reports which of the controllers iomatrix asked for (its own and
// Extra) a cgroup of its has: Extra may be missing where the hierarchy
// does not offer it.
func (g *Group) Enabled() []string {
	have, _ := readList(filepath.Join(g.Path, "cgroup.controllers"))
	var on []string
	for _, c := range g.ctrl.controllers() {
		if slices.Contains(have, c) {
			on = append(on, c)
		}
	}
	return on
}

// prepare makes the iomatrix directory of p with the controllers enabled
// for its children, first moving this process into a leaf of its own
// when p is its delegated cgroup. It returns the leaf ("" if none).
//
// Runs share the iomatrix directory, and the last one out removes it:
// callers hold the place's lock (lockPlace) around making a group and
// around removing one, so that no run removes the directory between
// another's steps.
func (c Controller) prepare(p Place) (leaf string, err error) {
	if c.Version != 2 {
		return "", mkdirShared(p.Base())
	}
	if err := mkdirShared(p.Base()); err != nil {
		return "", err
	}
	if p.Delegated {
		leaf = filepath.Join(p.Base(), fmt.Sprintf("%d-self", os.Getpid()))
		if err := mkdirShared(leaf); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return leaf, fmt.Errorf("move this process into a leaf of its delegated cgroup (%s): %w", leaf, err)
		}
	}
	want := c.controllers()
	before := c.notEnabled(p.Dir, want)
	if err := c.enable(p.Dir, want); err != nil {
		return leaf, err
	}
	if !p.Delegated {
		// What iomatrix enabled in the root is disabled again when its
		// last cgroup goes (release): in a namespace's root, or no
		// process could ever join it again; in the real root, so that the
		// tree is left as found. The note lives on the iomatrix
		// directory, so that whichever run is last out finds it.
		if on := slices.DeleteFunc(before, func(ctrl string) bool { return slices.Contains(c.notEnabled(p.Dir, want), ctrl) }); len(on) > 0 {
			// Without the note, the controllers stay on: harmless but for
			// the processes that could not join the root again.
			_ = unix.Setxattr(p.Base(), enabledXattr, []byte(strings.Join(on, " ")), 0)
		}
	}
	return leaf, c.enable(p.Base(), want)
}

// enabledXattr notes on the iomatrix directory the controllers iomatrix
// enabled in its parent.
const enabledXattr = "trusted.iomatrix.enabled"

// release removes the shared iomatrix directory of a place that is not a
// delegated one, if no run uses it any more, and disables in its parent
// what iomatrix enabled there (see prepare), but for a controller that
// another user took up meanwhile: a cgroup beside iomatrix's that
// configures it, whose settings turning it off would drop. The caller
// holds the place's lock.
func (c Controller) release(p Place) {
	buf := make([]byte, 256)
	n, err := unix.Getxattr(p.Base(), enabledXattr, buf)
	// Read before the directory goes: a fresh cgroup's settings, against
	// which the others' tell whether they use a controller.
	var fresh map[string]string
	if err == nil && n > 0 {
		fresh = settings(p.Base(), strings.Fields(string(buf[:n])))
	}
	if os.Remove(p.Base()) != nil || err != nil || n == 0 {
		return
	}
	var off []string
	for _, ctrl := range strings.Fields(string(buf[:n])) {
		if !usedBeside(p.Dir, ctrl, fresh) {
			off = append(off, "-"+ctrl)
		}
	}
	if len(off) == 0 {
		return
	}
	// Best effort: a controller that a cgroup below enables for its own
	// children cannot be turned off (EBUSY), and then rightly stays.
	_ = os.WriteFile(filepath.Join(p.Dir, "cgroup.subtree_control"), []byte(strings.Join(off, " ")), 0)
}

// notSetting tells the writable files named <controller>.* that hold a
// figure, not a setting, and so differ between cgroups without anyone
// configuring anything: the pressure files (PSI, the cgroup core's, there
// whether or not the controller is on; a write sets a trigger) and the
// peaks (a write resets them).
func notSetting(name string) bool {
	return strings.HasSuffix(name, ".pressure") || strings.HasSuffix(name, ".peak")
}

// settings reads the files of dir that configure the controllers: those
// named <controller>.* that can be both read and written.
func settings(dir string, ctrls []string) map[string]string {
	out := map[string]string{}
	for _, ctrl := range ctrls {
		files, _ := filepath.Glob(filepath.Join(dir, ctrl+".*"))
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil || st.Mode().Perm()&0o600 != 0o600 || notSetting(filepath.Base(f)) {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
				out[filepath.Base(f)] = string(b)
			}
		}
	}
	return out
}

// usedBeside reports whether a child of dir (iomatrix's directory is gone
// by now) uses ctrl: it enables it for its own children, or one of its
// settings differs from a fresh cgroup's.
func usedBeside(dir, ctrl string, fresh map[string]string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		child := filepath.Join(dir, e.Name())
		if on, _ := readList(filepath.Join(child, "cgroup.subtree_control")); slices.Contains(on, ctrl) {
			return true
		}
		for name, v := range settings(child, []string{ctrl}) {
			if want, ok := fresh[name]; ok && v != want {
				return true
			}
		}
	}
	return false
}

// unprepare undoes prepare for a delegated place when this process's
// cgroups are all gone: controllers off again in p.Dir, the process back
// where it was, its leaf and the iomatrix directory removed. With other
// cgroups left (another iomatrix's), it leaves everything: the process
// ends in its leaf, which `cap cleanup` removes later.
func (c Controller) unprepare(p Place, leaf string) error {
	if leaf == "" {
		return nil
	}
	entries, err := os.ReadDir(p.Base())
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && filepath.Join(p.Base(), e.Name()) != leaf {
			return nil // another run's
		}
	}
	var off []string
	for _, ctrl := range c.controllers() {
		off = append(off, "-"+ctrl)
	}
	// Off for iomatrix's directory (else p.Dir cannot give them up), then
	// for p.Dir, so that the process may return there.
	_ = os.WriteFile(filepath.Join(p.Base(), "cgroup.subtree_control"), []byte(strings.Join(off, " ")), 0)
	if err := os.WriteFile(filepath.Join(p.Dir, "cgroup.subtree_control"), []byte(strings.Join(off, " ")), 0); err != nil {
		return fmt.Errorf("give up the controllers of %s: %w", p.Dir, err)
	}
	if err := os.WriteFile(filepath.Join(p.Dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("move this process back to %s: %w", p.Dir, err)
	}
	os.Remove(leaf)
	removeShared(p.Base())
	return nil
}

// lockPlace serializes, across processes, the runs that make and remove
// cgroups in p: an exclusive flock on p.Dir, which no run removes. The
// returned func releases it.
func lockPlace(p Place) (func(), error) {
	fd, err := unix.Open(p.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p.Dir, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "lock", Path: p.Dir, Err: err}
	}
	return func() { unix.Close(fd) }, nil
}

// mkdirShared makes a directory that concurrent runs share.
func mkdirShared(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err // an *os.PathError names the directory
	}
	return nil
}

// removeShared removes a shared directory if it is empty and still there:
// another run may be using it, or have removed it first.
func removeShared(dir string) {
	os.Remove(dir)
}

// SystemdUnit is the systemd unit (a .service or .scope) whose cgroup
// holds path, or "".
func SystemdUnit(path string) string {
	unit := ""
	for _, c := range strings.Split(path, "/") {
		if strings.HasSuffix(c, ".service") || strings.HasSuffix(c, ".scope") {
			unit = c
		}
	}
	return unit
}

func isRealRoot(dir string) bool {
	// Every cgroup but the root has a type (domain, threaded, …).
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, fs.ErrNotExist)
}

// delegated reports whether systemd delegated dir to its unit.
func delegated(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		buf := make([]byte, 8)
		n, err := unix.Getxattr(dir, attr, buf)
		if err == nil && string(bytes.TrimSpace(buf[:n])) == "1" {
			return true
		}
	}
	return false
}

// writable checks that cgroups can be made in dir: a read-only cgroupfs
// (the usual unprivileged container) or missing permissions are found
// before any I/O.
func writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		if errors.Is(err, unix.EROFS) {
			return fmt.Errorf("cgroup %s is on a read-only cgroupfs (a container without cgroup delegation?): %w", dir, err)
		}
		return fmt.Errorf("cannot create cgroups in %s: %w", dir, err)
	}
	return nil
}

func internalProcessError(dir string, want []string, procs []int) error {
	pids := make([]string, 0, 3)
	for _, p := range procs[:min(len(procs), 3)] {
		pids = append(pids, strconv.Itoa(p))
	}
	more := ""
	if len(procs) > 3 {
		more = ", …"
	}
	return fmt.Errorf("%w: cgroup %s holds %d process(es) (pid %s%s), and a cgroup that holds processes cannot enable %s for its children; "+
		"move every process of %s into a child cgroup (a leaf), or run iomatrix in a cgroup delegated to it",
		ErrInternalProcess, dir, len(procs), strings.Join(pids, ", "), more, strings.Join(want, " "), dir)
}

func readList(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

func readProcs(dir string) ([]int, error) {
	fields, err := readList(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range fields {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}
