package main

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// refusalSnap is what a refused command must leave as it was.
type refusalSnap struct {
	files    map[string]fileState // the working directory's entries, by relative path
	cgroups  map[string]string    // every cgroup directory, with its limits
	loops    map[string]string    // every attached loop device, with its backing file
	counters []uint64             // the target's /sys/block/NAME/stat
}

type fileState struct {
	kind  fs.FileMode // the type bits
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte // of a regular file's content
	link  string            // a symlink's target
}

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// ioHierarchies are the cgroup hierarchies where iomatrix makes cgroups
// or sets limits: cgroup v2's, and v1's blkio.
func ioHierarchies() []string {
	var fsys unix.Statfs_t
	if unix.Statfs(cgroupRoot, &fsys) == nil && fsys.Type == unix.CGROUP2_SUPER_MAGIC {
		return []string{cgroupRoot}
	}
	return []string{filepath.Join(cgroupRoot, "blkio"), filepath.Join(cgroupRoot, "unified")}
}

// cgroupLimitFiles are the files of a cgroup that hold limits or enable
// controllers below it: a refusal writes none of them.
var cgroupLimitFiles = []string{"cgroup.subtree_control", "io.max", "io.weight", "io.cost.model", "io.cost.qos",
	"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device",
	"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"}

func (e *refusalEnv) snapshot(t *testing.T, dir string) refusalSnap {
	t.Helper()
	s := refusalSnap{files: map[string]fileState{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		st := fileState{kind: fi.Mode().Type(), size: fi.Size(), mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			st.sum = sha256.Sum256(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			st.link, _ = os.Readlink(path)
		}
		s.files[rel] = st
		return nil
	})
	testenv.Must(t, err)
	if e.cgroups {
		s.cgroups, s.loops = cgroupDirs(), attachedLoops()
	}
	if e.dev != "" {
		s.counters = deviceCounters(t, e.dev)
	}
	return s
}

// cgroupDirs lists every cgroup of the I/O hierarchies with its limits. A
// cgroup that goes while it is read (another test's) is left out.
func cgroupDirs() map[string]string {
	dirs := map[string]string{}
	for _, root := range ioHierarchies() {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil // a file, or a cgroup removed meanwhile
			}
			var limits []string
			for _, f := range cgroupLimitFiles {
				if data, err := os.ReadFile(filepath.Join(path, f)); err == nil && len(strings.TrimSpace(string(data))) > 0 {
					limits = append(limits, f+": "+strings.Join(strings.Fields(string(data)), " "))
				}
			}
			dirs[path] = strings.Join(limits, "; ")
			return nil
		})
	}
	return dirs
}

// attachedLoops maps each attached loop device to its backing file.
func attachedLoops() map[string]string {
	loops := map[string]string{}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			loops[filepath.Base(filepath.Dir(filepath.Dir(f)))] = strings.TrimSpace(string(data))
		}
	}
	return loops
}

func deviceCounters(t *testing.T, dev string) []uint64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "stat"))
	testenv.Must(t, err)
	var c []uint64
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.ParseUint(f, 10, 64)
		testenv.Must(t, err)
		c = append(c, n)
	}
	return c
}

// settle waits until nothing does I/O on the fresh device any more (on a
// machine with udev, its probe reads the device once it is attached).
func (e *refusalEnv) settle(t *testing.T) {
	t.Helper()
	last, since := deviceCounters(t, e.dev), time.Now()
	testenv.Until(t, 10*time.Second, e.dev+": its counters still for 250ms", func() bool {
		if now := deviceCounters(t, e.dev); !slices.Equal(now, last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= 250*time.Millisecond
	})
}
