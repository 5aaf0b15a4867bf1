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
		"proc/stat":                    "cpu  10 2 3 500 9 1 1 3 4 0\ncpu0 5 1 2 250 5 0 0 0 0 0\nintr 1 2 3\n",
	})
	c := &cpuWatch{sched: sys.SchedReader(), streams: map[int]bool{101: true}, rings: true, ringWorkers: map[int]bool{}, daemons: []int{300}}
	defer c.close()
	got := c.read()
	if want := map[int]threadTimes{101: {1, 1000}, 102: {1, 200}, 104: {1, 40}}; !reflect.DeepEqual(got.own, want) {
		t.Errorf("own threads %v; want %v", got.own, want)
	}
	if want := map[int]threadTimes{14: {1, 7}, 40: {1, 5000}, 300: {1, 60}, 301: {1, 70}}; !reflect.DeepEqual(got.served, want) {
		t.Errorf("threads serving the target %v; want %v", got.served, want)
	}
	// user 10 + nice 2 + system 3 + irq 1 + softirq 1 + steal 3 ticks.
	if got.busy != 200*time.Millisecond || got.busyAt < got.ownAt {
		t.Errorf("machine busy %v at %d", got.busy, got.busyAt)
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
	if got := c.read(); !reflect.DeepEqual(got.own, map[int]threadTimes{101: {1, 1000}}) {
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
// readings to the window; the share of the window at most 100 %, and at
// most the CPU time the rest of the machine ran.
func TestCPUWaitDelta(t *testing.T) {
	tt := func(wait time.Duration) threadTimes { return threadTimes{run: 10 * wait, wait: wait} }
	s := waitReading{own: map[int]threadTimes{1: tt(100), 2: tt(500)}, served: map[int]threadTimes{10: tt(1000), 11: tt(50)},
		ownAt: 1000, servedAt: 1000}
	e := waitReading{own: map[int]threadTimes{1: tt(300), 3: tt(40)}, served: map[int]threadTimes{10: tt(1600), 11: tt(20)},
		ownAt: 11000, servedAt: 11000}
	got := s.cpuWait(e, 10000)
	want := &results.CPUWait{IOThreadsNS: 240, IOThreads: 2, TargetThreadsNS: 620, TargetThreads: 2, RunNS: 8600, Pct: 8.6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cpuWait = %+v; want %+v", got, want)
	}
	// Read 5,000 ns late at the start: the own threads' 240 ns went on
	// over half the window; the kernel's, read on time, over all of it.
	s.ownAt = 6000
	if got := s.cpuWait(e, 10000); got.IOThreadsNS != 480 || got.TargetThreadsNS != 620 {
		t.Errorf("read late: %+v; want 480 ns and 620 ns", got)
	}
	s.ownAt = 1000
	// The machine busy 9,000 ns over the window, 8,600 of them the
	// watched threads': the others ran 400, all the I/O can have lost to
	// them, however long it waited behind its own threads.
	s.busy, s.busyAt, e.busy, e.busyAt = 1000, 1000, 10000, 11000
	if got := s.cpuWait(e, 10000); got.OthersNS == nil || *got.OthersNS != 400 || got.Pct != 4 || got.Wait(10000) != 400 {
		t.Errorf("others ran 400 ns: %+v", got)
	}
	// Busy less than the watched threads ran (ticks against ns): none.
	e.busy = 5000
	if got := s.cpuWait(e, 10000); got.OthersNS == nil || *got.OthersNS != 0 || got.Pct != 0 {
		t.Errorf("others ran none: %+v", got)
	}
	// Unread at either edge: unknown, and the waits count whole.
	e.busyAt = 0
	if got := s.cpuWait(e, 10000); got.OthersNS != nil || got.Pct != 8.6 {
		t.Errorf("machine unread: %+v", got)
	}
	// Threads that wait at once can sum to more than the window.
	e.own[1] = tt(20000)
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
