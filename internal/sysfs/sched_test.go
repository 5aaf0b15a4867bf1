package sysfs

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The kernel's threads and the waits of threads, read again and again
// from files kept open; a process's threads and their names; the FUSE
// daemons; a loop device's backing file: read from a fixture tree.
func TestSchedTree(t *testing.T) {
	ft := newFakeTree(t)
	ft.write(t, "proc/2/task/2/children", "14 40 ")
	ft.write(t, "proc/14/task/14/schedstat", "1 7 1\n")
	ft.write(t, "proc/40/task/40/schedstat", "900 5000 3\n")
	r := ft.fs.SchedReader()
	defer r.Close()
	if pids, err := r.KernelThreadIDs(); err != nil || !reflect.DeepEqual(pids, []int{14, 40}) {
		t.Errorf("KernelThreadIDs = %v, %v", pids, err)
	}
	if _, d, err := r.Sched(40, 40); err != nil || d != 5000 {
		t.Errorf("Sched(40, 40) = %v, %v", d, err)
	}
	// Read again from the open file, and from its start.
	ft.write(t, "proc/40/task/40/schedstat", "901 5001 4\n")
	if _, d, err := r.Sched(40, 40); err != nil || d != 5001 {
		t.Errorf("Sched(40, 40) again = %v, %v", d, err)
	}
	if run, wait, err := r.Sched(40, 40); err != nil || run != 901 || wait != 5001 {
		t.Errorf("Sched(40, 40) = %v, %v, %v", run, wait, err)
	}
	ft.write(t, "proc/stat", "cpu  1 0 1 50 0 0 0 0 0 0\n")
	if d, err := r.MachineBusy(); err != nil || d != 20*time.Millisecond {
		t.Errorf("MachineBusy = %v, %v", d, err)
	}
	ft.write(t, "proc/stat", "cpu  2 0 1 60 0 0 0 0 0 0\n")
	if d, err := r.MachineBusy(); err != nil || d != 30*time.Millisecond {
		t.Errorf("MachineBusy again = %v, %v", d, err)
	}
	ft.write(t, "proc/self/task/7/schedstat", "1\n")
	if _, _, err := r.Sched(0, 7); err == nil || !strings.Contains(err.Error(), "task/7/schedstat") {
		t.Errorf("a short schedstat: %v; want its path named", err)
	}
	if _, _, err := r.Sched(0, 8); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a thread that ended: %v", err)
	}
	// A reading allocates nothing once the files are open.
	if n := testing.AllocsPerRun(10, func() {
		pids, _ := r.KernelThreadIDs()
		for _, pid := range pids {
			_, _, _ = r.Sched(pid, pid)
		}
	}); n > 0 {
		t.Errorf("a reading allocates %v times", n)
	}

	// Past maxKept open files a file is opened for each reading.
	for i := 0; len(r.files) < maxKept; i++ {
		r.files[[2]int{-1, i}] = -1
	}
	if _, d, err := r.Sched(14, 14); err != nil || d != 7 || len(r.files) != maxKept {
		t.Errorf("Sched of a thread kept open = %v, %v (%d open)", d, err, len(r.files))
	}
	ft.write(t, "proc/41/task/41/schedstat", "1 8 1\n")
	if _, d, err := r.Sched(41, 41); err != nil || d != 8 || len(r.files) != maxKept {
		t.Errorf("Sched past maxKept = %v, %v (%d open)", d, err, len(r.files))
	}
	for i := 0; i < maxKept; i++ {
		delete(r.files, [2]int{-1, i})
	}

	ft.write(t, "proc/self/task/100/comm", "iomatrix\n")
	ft.write(t, "proc/self/task/101/comm", "iou-wrk-100\n")
	ft.mkdir(t, "proc/self/task/x")
	tids, err := r.TaskIDs(0)
	slices.Sort(tids)
	if err != nil || !reflect.DeepEqual(tids, []int{7, 100, 101}) {
		t.Errorf("TaskIDs(0) = %v, %v", tids, err)
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = r.TaskIDs(0) }); n > 0 {
		t.Errorf("listing threads allocates %v times", n)
	}
	if _, err := r.TaskIDs(4242); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the threads of no process: %v", err)
	}
	if comm, err := r.Comm(0, 101); err != nil || string(comm) != "iou-wrk-100" {
		t.Errorf("Comm(0, 101) = %q, %v", comm, err)
	}
	if _, err := r.Comm(0, 102); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a thread that ended: %v", err)
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = r.Comm(0, 101) }); n > 0 {
		t.Errorf("reading a name allocates %v times", n)
	}

	ft.symlink(t, "/dev/fuse", "proc/300/fd/3")
	ft.symlink(t, "/dev/null", "proc/301/fd/0")
	ft.mkdir(t, "proc/302") // its descriptors cannot be read
	ft.write(t, "proc/meminfo", "")
	if pids, err := ft.fs.FUSEDaemons(); err != nil || !reflect.DeepEqual(pids, []int{300}) {
		t.Errorf("FUSEDaemons = %v, %v; want [300]", pids, err)
	}

	ft.write(t, "sys/block/loop9/loop/backing_file", "/mnt/fuse/disk img\n")
	if f, err := ft.fs.LoopBackingFile("loop9"); err != nil || f != "/mnt/fuse/disk img" {
		t.Errorf("LoopBackingFile = %q, %v", f, err)
	}
	if _, err := ft.fs.LoopBackingFile("loop8"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unbound loop device: %v", err)
	}
}
