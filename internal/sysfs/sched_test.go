package sysfs

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The kernel's threads, their names and waits, the FUSE daemons, a loop
// device's backing file, read from a fixture tree.
func TestSchedTree(t *testing.T) {
	ft := newFakeTree(t)
	ft.write(t, "proc/2/task/2/children", "14 40 ")
	ft.write(t, "proc/40/task/40/comm", "kworker/u8:3+loop0\n")
	ft.write(t, "proc/40/task/40/schedstat", "900 5000 3\n")
	if pids, err := ft.fs.KernelThreadIDs(); err != nil || !reflect.DeepEqual(pids, []int{14, 40}) {
		t.Errorf("KernelThreadIDs = %v, %v", pids, err)
	}
	if comm, err := ft.fs.TaskComm(40, 40); err != nil || comm != "kworker/u8:3+loop0" {
		t.Errorf("TaskComm(40, 40) = %q, %v", comm, err)
	}
	if _, err := ft.fs.TaskComm(14, 14); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a thread that ended: %v", err)
	}
	if d, err := ft.fs.TaskRunDelay(40, 40); err != nil || d != 5000 {
		t.Errorf("TaskRunDelay(40, 40) = %v, %v", d, err)
	}
	ft.write(t, "proc/self/task/7/schedstat", "1\n")
	if _, err := ft.fs.TaskRunDelay(0, 7); err == nil || !strings.Contains(err.Error(), "task/7/schedstat") {
		t.Errorf("a short schedstat: %v; want its path named", err)
	}
	if _, err := ft.fs.TaskRunDelay(0, 8); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a thread that ended: %v", err)
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
