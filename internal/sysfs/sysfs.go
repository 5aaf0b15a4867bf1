// Package sysfs is iomatrix's every read of /sys and /proc: block-device
// facts and counters, what holds a device, and a process's cgroups,
// mappings and threads, from a sysfs tree and a procfs tree.
//
// Both roots are parameters so that tests can point an FS at a fixture tree;
// every method opens one file or directory and hands the bytes to a pure
// parser that the tests also feed directly.
package sysfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoDevice reports that no block device has the requested number. It also
// matches os.ErrNotExist so that callers who only care about "missing" need
// not know this package's sentinel.
var ErrNoDevice error = noDeviceError{}

type noDeviceError struct{}

func (noDeviceError) Error() string        { return "no such block device" }
func (noDeviceError) Is(target error) bool { return target == os.ErrNotExist }

// ErrNotWholeDisk reports that an operation that only makes sense for a whole
// disk was given a partition.
var ErrNotWholeDisk = errors.New("not a whole disk")

// FS reads block-device facts below a sysfs root and a procfs root.
type FS struct {
	sys  string
	proc string
	// statRdev maps a path such as /dev/vda1 to the device number it names.
	// Swap and loop entries name /dev paths that do not exist inside a
	// fixture tree, so tests replace it.
	statRdev func(path string) (DevNum, bool)
}

// Where the running system mounts sysfs, procfs and cgroupfs.
const (
	SysRoot    = "/sys"
	ProcRoot   = "/proc"
	CgroupRoot = "/sys/fs/cgroup"
)

// NewFS returns an FS that reads sysfs below sysRoot and procfs below procRoot.
func NewFS(sysRoot, procRoot string) FS {
	return FS{sys: sysRoot, proc: procRoot, statRdev: statBlockRdev}
}

// Default returns an FS for the running system. Only a main package
// calls it: libraries are given their FS.
func Default() FS { return NewFS(SysRoot, ProcRoot) }

func (fs FS) resolve(path string) (DevNum, bool) {
	if fs.statRdev == nil {
		return statBlockRdev(path)
	}
	return fs.statRdev(path)
}

// statBlockRdev follows symlinks because /dev/disk/by-* and /dev/mapper
// entries are links to the real nodes.
func statBlockRdev(path string) (DevNum, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return DevNum{}, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return DevNum{}, false
	}
	// Rdev is narrower than uint64 on some architectures.
	return DevNumFromDev(uint64(st.Rdev)), true
}

// DevNum is a block device number.
type DevNum struct{ Major, Minor uint32 }

// String formats the number the way sysfs and mountinfo spell it.
func (d DevNum) String() string {
	return strconv.FormatUint(uint64(d.Major), 10) + ":" + strconv.FormatUint(uint64(d.Minor), 10)
}

// DevNumFromDev splits a stat st_dev or st_rdev value.
func DevNumFromDev(dev uint64) DevNum {
	return DevNum{Major: unix.Major(dev), Minor: unix.Minor(dev)}
}

// ParseDevNum parses "MAJOR:MINOR" as found in sysfs dev files, mountinfo and
// on command lines.
func ParseDevNum(s string) (DevNum, error) {
	majStr, minStr, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return DevNum{}, fmt.Errorf("device number %q: want MAJOR:MINOR", s)
	}
	maj, err := strconv.ParseUint(majStr, 10, 32)
	if err != nil {
		return DevNum{}, fmt.Errorf("device number %q: major: %w", s, err)
	}
	minor, err := strconv.ParseUint(minStr, 10, 32)
	if err != nil {
		return DevNum{}, fmt.Errorf("device number %q: minor: %w", s, err)
	}
	return DevNum{Major: uint32(maj), Minor: uint32(minor)}, nil
}

// newLineScanner allows long lines because mountinfo options of overlay
// mounts with many layers exceed bufio's 64 KiB default.
// parseFile opens path and hands it to parse. An error of the open names
// the file already (an *os.PathError); a parse error is given its name.
func parseFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readFile reads path whole and hands it to parse, naming the file in a
// parse error as parseFile does.
func readFile[T any](path string, parse func([]byte) (T, error)) (T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseLines applies parse to every line of r that is not blank; an error
// names the file format (what) and the line.
func parseLines[T any](r io.Reader, what string, parse func(line string) (T, error)) ([]T, error) {
	var out []T
	sc := newLineScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		v, err := parse(line)
		if err != nil {
			return nil, fmt.Errorf("parse %s line %d: %w", what, lineNo, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	return sc
}

// unescapeOctal decodes the \ooo escapes the kernel uses for space, tab,
// newline and backslash in mountinfo and /proc/swaps. Anything that is not a
// well-formed escape is kept verbatim rather than rejected, since a stray
// backslash there is still the best available name.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		// A leading digit above 3 would not fit in a byte.
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// readAttr reads a one-line sysfs attribute.
func readAttr(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readIntAttr(path string) (int64, error) {
	s, err := readAttr(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

func readDevAttr(dir string) (DevNum, error) {
	path := filepath.Join(dir, "dev")
	s, err := readAttr(path)
	if err != nil {
		return DevNum{}, err
	}
	d, err := ParseDevNum(s)
	if err != nil {
		return DevNum{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return d, nil
}

// kernelName turns a sysfs directory name back into the kernel's device
// name: sysfs cannot hold '/' in a name, so devices such as cciss/c0d0
// appear as cciss!c0d0, while /dev and /proc/diskstats use the slash.
func kernelName(sysName string) string {
	return strings.ReplaceAll(sysName, "!", "/")
}
