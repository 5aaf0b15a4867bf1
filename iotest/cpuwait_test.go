package iotest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// writeTree writes files (path: content) below a fresh root and returns
// an FS over it.
func writeTree(t *testing.T, files map[string]string) sysfs.FS {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sysfs.NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc"))
}

// A reading holds the streams' threads with their rings' workers (named
// after the stream's thread), the kernel's threads and the FUSE daemons'
// threads; not this process's other threads, nor another ring's workers.
func TestCPUWatchRead(t *testing.T) {
	sys := writeTree(t, map[string]string{
		"proc/self/task/100/comm":      "iomatrix\n",
		"proc/self/task/100/schedstat": "1 999 1\n", // not a stream
		"proc/self/task/101/comm":      "iomatrix\n",
		"proc/self/task/101/schedstat": "1 1000 1\n",
		"proc/self/task/102/comm":      "iou-wrk-101\n",
		"proc/self/task/102/schedstat": "1 200 1\n",
		"proc/self/task/103/comm":      "iou-wrk-100\n", // another thread's ring
		"proc/self/task/103/schedstat": "1 300 1\n",
		"proc/self/task/104/comm":      "iou-sqp-101\n",
		"proc/self/task/104/schedstat": "1 40 1\n",
		"proc/2/task/2/children":       "14 40",
		"proc/14/task/14/schedstat":    "1 7 1\n",
		"proc/40/task/40/schedstat":    "1 5000 1\n",
		"proc/300/task/300/schedstat":  "1 60 1\n", // a FUSE daemon's threads
		"proc/300/task/301/schedstat":  "1 70 1\n",
	})
	c := &cpuWatch{sched: sys.SchedReader(), streams: map[int]bool{101: true}, rings: true, ringWorkers: map[int]bool{}, daemons: []int{300}}
	defer c.close()
	got := c.read()
	if want := map[int]time.Duration{101: 1000, 102: 200, 104: 40}; !reflect.DeepEqual(got.own, want) {
		t.Errorf("own threads %v; want %v", got.own, want)
	}
	if want := map[int]time.Duration{14: 7, 40: 5000, 300: 60, 301: 70}; !reflect.DeepEqual(got.served, want) {
		t.Errorf("threads serving the target %v; want %v", got.served, want)
	}
	if got.ownAt <= 0 || got.servedAt < got.ownAt {
		t.Errorf("read at %d, then %d", got.ownAt, got.servedAt)
	}
	// A thread's name is read once: a ring's worker is one for good.
	if want := map[int]bool{100: false, 101: false, 102: true, 103: false, 104: true}; !reflect.DeepEqual(c.ringWorkers, want) {
		t.Errorf("ring workers %v; want %v", c.ringWorkers, want)
	}
	// A psync stream has no ring: its thread alone.
	c.rings = false
	if got := c.read(); !reflect.DeepEqual(got.own, map[int]time.Duration{101: 1000}) {
		t.Errorf("without rings: own %v", got.own)
	}
	// Without schedstat the wait is unknown, not zero.
	c.streams = map[int]bool{105: true}
	if got := c.read(); got.own != nil {
		t.Errorf("no schedstat: %+v", got)
	}
	var none *cpuWatch
	if got := none.read(); got.own != nil {
		t.Errorf("no watch: %+v", got)
	}
	none.close()
}

// The wait between two readings: each thread's growth, all of a thread's
// wait when it started (or its id was reused) after the first, nothing
// of a thread that ended; each kind scaled from the span between its
// readings to the window; the share of the window at most 100 %.
func TestCPUWaitDelta(t *testing.T) {
	s := waitReading{own: map[int]time.Duration{1: 100, 2: 500}, served: map[int]time.Duration{10: 1000, 11: 50}, ownAt: 1000, servedAt: 1000}
	e := waitReading{own: map[int]time.Duration{1: 300, 3: 40}, served: map[int]time.Duration{10: 1600, 11: 20}, ownAt: 11000, servedAt: 11000}
	got := s.cpuWait(e, 10000)
	want := &results.CPUWait{IOThreadsNS: 240, IOThreads: 2, TargetThreadsNS: 620, TargetThreads: 2, Pct: 8.6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cpuWait = %+v; want %+v", got, want)
	}
	// Read 5,000 ns late at the start: the own threads' 240 ns went on
	// over half the window; the kernel's, read on time, over all of it.
	s.ownAt = 6000
	if got := s.cpuWait(e, 10000); got.IOThreadsNS != 480 || got.TargetThreadsNS != 620 {
		t.Errorf("read late: %+v; want 480 ns and 620 ns", got)
	}
	// Threads that wait at once can sum to more than the window.
	e.own[1] = 20000
	if got := s.cpuWait(e, 10000); got.Pct != 100 {
		t.Errorf("threads waiting at once: %v %%; want 100", got.Pct)
	}
	if got := (waitReading{}).cpuWait(e, 10000); got != nil {
		t.Errorf("no first reading: %+v", got)
	}
	if got := s.cpuWait(waitReading{}, 10000); got != nil {
		t.Errorf("no last reading: %+v", got)
	}
}
