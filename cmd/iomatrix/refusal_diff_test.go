package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/cgroup"
)

// diffFiles says what was created, removed or changed. A directory
// modified by an entry made or removed in it is not said twice.
func diffFiles(before, after map[string]fileState) string {
	var d []string
	madeIn := map[string]bool{}
	for _, p := range sortedKeys(before, after) {
		if _, inB := before[p]; !inB {
			madeIn[filepath.Dir(p)] = true
		} else if _, inA := after[p]; !inA {
			madeIn[filepath.Dir(p)] = true
		}
	}
	for _, p := range sortedKeys(before, after) {
		b, inB := before[p]
		a, inA := after[p]
		switch {
		case !inB:
			d = append(d, fmt.Sprintf("created %s (%s)", p, describe(a)))
		case !inA:
			d = append(d, "removed "+p)
		case b.kind != a.kind || b.link != a.link:
			d = append(d, fmt.Sprintf("%s: was %s, now %s", p, describe(b), describe(a)))
		case a.kind.IsDir() && !a.mtime.Equal(b.mtime) && !madeIn[p]:
			d = append(d, fmt.Sprintf("directory %s modified (an entry was made and removed in it)", p))
		case a.kind.IsDir(): // its entries say what changed
		case a.sum != b.sum || a.size != b.size:
			d = append(d, fmt.Sprintf("%s rewritten (%d bytes, now %d)", p, b.size, a.size))
		case !a.mtime.Equal(b.mtime):
			d = append(d, fmt.Sprintf("%s written (same bytes, new mtime)", p))
		}
	}
	return strings.Join(d, "; ")
}

func describe(s fileState) string {
	switch {
	case s.kind.IsDir():
		return "a directory"
	case s.kind&fs.ModeSymlink != 0:
		return "a symlink to " + s.link
	case s.kind.IsRegular():
		return fmt.Sprintf("%d bytes", s.size)
	}
	return s.kind.String()
}

// diffCgroups says which cgroups were made, removed or limited. A change
// that is another process's (a run or a test of another package, named
// after its own process id or as a test's) is logged, not counted; so is
// iomatrix's shared parent directory, which any run makes and removes.
func diffCgroups(t *testing.T, before, after map[string]string, pid int) string {
	t.Helper()
	var d []string
	for _, p := range sortedKeys(before, after) {
		b, inB := before[p]
		a, inA := after[p]
		var what string
		switch {
		case !inB:
			what = "made " + p
		case !inA:
			what = "removed " + p
		case a != b:
			what = fmt.Sprintf("%s: %q, now %q", p, b, a)
		default:
			continue
		}
		if whose := foreignCgroup(p, pid, inA && inB); whose != "" {
			t.Logf("not counted, %s: %s", whose, what)
			continue
		}
		d = append(d, what)
	}
	return strings.Join(d, "; ")
}

var (
	runCgroup  = regexp.MustCompile(`^([0-9]+)-([0-9]+|self)$`) // cgroup.Create's PID-N and PID-self
	pidCgroup  = regexp.MustCompile(`-([0-9]+)$`)               // iomatrix-observe-PID, iomatrix-test-NAME-PID
	testCgroup = regexp.MustCompile(`(^|-)test(-|$)`)           // a test's own
)

// foreignCgroup says whose the cgroup at path is when it is not the
// process pid's ("": it may be).
func foreignCgroup(path string, pid int, existed bool) string {
	rel, _ := filepath.Rel(cgroupRoot, path)
	parts := strings.Split(rel, string(filepath.Separator))
	if !existed && parts[len(parts)-1] == cgroup.Parent {
		return "the parent every iomatrix run shares"
	}
	for _, part := range parts {
		m := runCgroup.FindStringSubmatch(part)
		if m == nil {
			m = pidCgroup.FindStringSubmatch(part)
		}
		if m != nil && m[1] != strconv.Itoa(pid) {
			return "process " + m[1] + "'s"
		}
		if m == nil && testCgroup.MatchString(part) {
			return "a test's"
		}
	}
	return ""
}

// diffLoops says which loop devices were attached or detached among those
// that are the case's: the target, or backed by a file in its directory.
// Others are logged: the tests of other packages attach their own.
func diffLoops(t *testing.T, before, after map[string]string, dir, dev string) string {
	t.Helper()
	var d []string
	for _, l := range sortedKeys(before, after) {
		b, a := before[l], after[l]
		if a == b {
			continue
		}
		what := fmt.Sprintf("%s: backed by %q, now %q", l, b, a)
		ours := dev != "" && l == filepath.Base(dev)
		for _, f := range []string{a, b} {
			ours = ours || (f != "" && strings.HasPrefix(f, dir+string(filepath.Separator)))
		}
		if !ours {
			t.Logf("not counted, another test's: %s", what)
			continue
		}
		d = append(d, what)
	}
	return strings.Join(d, "; ")
}

// diffCounters says what I/O the counters of /sys/block/NAME/stat show
// (Documentation/block/stat.rst): reads, writes, discards and flushes.
func diffCounters(before, after []uint64) string {
	if slices.Equal(before, after) {
		return ""
	}
	if len(before) != len(after) || len(after) < 11 {
		return fmt.Sprintf("stat %v, now %v", before, after)
	}
	delta := func(i int) uint64 {
		if i < len(after) {
			return after[i] - before[i]
		}
		return 0
	}
	return fmt.Sprintf("%d reads (%d sectors), %d writes (%d sectors), %d discards, %d flushes; %d ms busy",
		delta(0), delta(2), delta(4), delta(6), delta(11), delta(15), delta(9))
}

func sortedKeys[V any](maps ...map[string]V) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}
