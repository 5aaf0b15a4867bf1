package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Mode is how cgroups are mounted on the host.
type Mode int

// The modes.
const (
	Unavailable Mode = iota
	Legacy           // v1 controllers only
	Hybrid           // v1 controllers and a v2 tree
	Unified          // v2 only
)

func (m Mode) String() string {
	return [...]string{"unavailable", "legacy", "hybrid", "unified"}[m]
}

// Controller is where the I/O controller lives: v1 blkio or v2 io.
type Controller struct {
	Mode    Mode
	Version int    // 1 or 2
	Root    string // cgroupfs root, e.g. /sys/fs/cgroup
	// Dir is the controller's hierarchy root: Root/blkio for v1, Root or
	// Root/unified for v2.
	Dir string
	// Name is the controller: "blkio" (v1) or "io" (v2). The tests of the
	// v2 tree mechanics put "hugetlb" in its place.
	Name string
	// Extra are controllers enabled beside Name where the hierarchy offers
	// them (v2): "memory", so that buffered writeback is charged to the
	// cgroup that dirtied the pages (see Writeback).
	Extra []string
	// Self is this process's v2 cgroup relative to Dir ("/" the root), as
	// /proc/self/cgroup gives it.
	Self string
}

// ErrNoIOController means neither v1 blkio nor v2 io is usable.
var ErrNoIOController = errors.New("no cgroup I/O controller (v1 blkio or v2 io)")

// DefaultRoot is where cgroupfs is mounted.
const DefaultRoot = sysfs.CgroupRoot

// Detect finds the mode and the I/O controller below root, and this
// process's cgroup in sys. On hybrid hosts v1 blkio is preferred, unless
// it is not mounted (booted with cgroup_no_v1=blkio) and the unified tree
// has the io controller.
func Detect(sys sysfs.FS, root string) (Controller, error) {
	return DetectFor(sys, root, "io")
}

// DetectFor is Detect with another v2 controller standing for io: the
// tests of the v2 tree mechanics use hugetlb, which this project's
// machines offer on their v2 hierarchy where io is not.
func DetectFor(sys sysfs.FS, root, v2controller string) (Controller, error) {
	c, err := detect(root, v2controller)
	switch c.Version {
	case 1:
		c.Name = "blkio"
	case 2:
		c.Name, c.Extra, c.Self = v2controller, []string{"memory"}, selfCgroup(sys)
	}
	return c, err
}

// selfCgroup is this process's v2 cgroup, "/" when unknown.
func selfCgroup(sys sysfs.FS) string {
	entries, err := sys.Cgroups(0)
	if err != nil {
		return "/"
	}
	for _, e := range entries {
		if e.ID == 0 {
			return e.Path
		}
	}
	return "/"
}

func detect(root, v2controller string) (Controller, error) {
	has := func(p string) bool { _, err := os.Stat(p); return err == nil }
	v2Has := func(dir string) bool {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		return err == nil && slices.Contains(strings.Fields(string(data)), v2controller)
	}
	blkio := filepath.Join(root, "blkio")
	v1 := has(filepath.Join(blkio, "blkio.throttle.read_iops_device"))
	switch {
	case has(filepath.Join(root, "cgroup.controllers")):
		c := Controller{Mode: Unified, Version: 2, Root: root, Dir: root}
		if !v2Has(root) {
			return c, fmt.Errorf("%w: the unified tree at %s has no %s controller", ErrNoIOController, root, v2controller)
		}
		return c, nil
	case has(filepath.Join(root, "unified", "cgroup.controllers")):
		if v1 {
			return Controller{Mode: Hybrid, Version: 1, Root: root, Dir: blkio}, nil
		}
		c := Controller{Mode: Hybrid, Version: 2, Root: root, Dir: filepath.Join(root, "unified")}
		if !v2Has(c.Dir) {
			return c, fmt.Errorf("%w: hybrid host without v1 blkio, and %s has no %s controller", ErrNoIOController, c.Dir, v2controller)
		}
		return c, nil
	case v1:
		return Controller{Mode: Legacy, Version: 1, Root: root, Dir: blkio}, nil
	case has(blkio):
		return Controller{Mode: Legacy, Version: 1, Root: root, Dir: blkio},
			fmt.Errorf("%w: %s has no throttle files (kernel without CONFIG_BLK_DEV_THROTTLING)", ErrNoIOController, blkio)
	}
	return Controller{Root: root}, fmt.Errorf("%w under %s", ErrNoIOController, root)
}
