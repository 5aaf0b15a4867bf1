package sysfs

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SchedReader reads threads' run-queue delays, names and lists again and
// again at little cost, for readings taken while I/O runs: a schedstat
// file or a task directory is opened once and read again from its start
// into one buffer, and paths are built in a buffer of their own, so that
// a reading allocates nothing once every thread has been read. It needs
// a kernel built with CONFIG_SCHED_INFO (schedstat files, most
// distributions'); the kernel's threads need CONFIG_PROC_CHILDREN. Close
// closes its files.
type SchedReader struct {
	fs FS
	// files holds the open files by (pid, tid): a schedstat; a process's
	// task directory under tid -1; kthreadd's children under (0, 0).
	files map[[2]int]int
	buf   []byte
	path  []byte
	pids  []int // kernel threads
	tids  []int // a process's threads
}

// SchedReader returns a reader of fs's threads.
func (fs FS) SchedReader() *SchedReader {
	return &SchedReader{fs: fs, files: map[[2]int]int{}, buf: make([]byte, 4096), path: make([]byte, 0, 256)}
}

// taskPath builds, in r.path, the path of file name of thread tid of
// process pid (0: this process; tid -1: the task directory itself), NUL
// terminated.
func (r *SchedReader) taskPath(pid, tid int, name string) []byte {
	p := append(append(r.path[:0], r.fs.proc...), '/')
	if pid == 0 {
		p = append(p, "self"...)
	} else {
		p = strconv.AppendInt(p, int64(pid), 10)
	}
	p = append(p, "/task"...)
	if tid >= 0 {
		p = strconv.AppendInt(append(p, '/'), int64(tid), 10)
	}
	if name != "" {
		p = append(append(p, '/'), name...)
	}
	r.path = append(p, 0)
	return r.path
}

// pathError is err at the path in r.path.
func (r *SchedReader) pathError(op string, err error) error {
	return &os.PathError{Op: op, Path: string(r.path[:len(r.path)-1]), Err: err}
}

// open opens the path in r.path, allocating nothing (unix.Open copies
// its path).
func (r *SchedReader) open(flags int) (int, error) {
	cwd := unix.AT_FDCWD
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(&r.path[0])),
		uintptr(flags|unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return -1, r.pathError("open", errno)
	}
	return int(fd), nil
}

// kept is the file of key, opened (with flags) at the path in r.path the
// first time and kept open.
func (r *SchedReader) kept(key [2]int, flags int) (int, error) {
	if fd, ok := r.files[key]; ok {
		return fd, nil
	}
	fd, err := r.open(flags)
	if err == nil {
		r.files[key] = fd
	}
	return fd, err
}

// drop closes the file of key: it could not be read (a thread that ended).
func (r *SchedReader) drop(key [2]int) {
	_ = unix.Close(r.files[key])
	delete(r.files, key)
}

// maxKept bounds the files a SchedReader keeps open: past it (a psync
// run of a thousand streams) a file is opened for each reading, so that
// the process's descriptors do not run out.
const maxKept = 512

// readKept reads the file of key whole from its start; see kept.
func (r *SchedReader) readKept(key [2]int) ([]byte, error) {
	if _, ok := r.files[key]; !ok && len(r.files) >= maxKept {
		return r.readOnce()
	}
	fd, err := r.kept(key, 0)
	if err != nil {
		return nil, err
	}
	data, err := r.pread(fd)
	if err != nil {
		r.drop(key)
		return nil, r.pathError("read", err)
	}
	return data, nil
}

// pread reads the file open as fd whole, from its start, into r.buf,
// growing it as needed.
func (r *SchedReader) pread(fd int) ([]byte, error) {
	for {
		n, err := unix.Pread(fd, r.buf, 0)
		if err != nil {
			return nil, err
		}
		if n < len(r.buf) {
			return r.buf[:n], nil
		}
		r.buf = make([]byte, 2*len(r.buf))
	}
}

// Sched is the CPU time thread tid of process pid (0: this process) has
// run and how long it has waited on a run queue, ready to run while other
// tasks held the CPUs: its schedstat's first two fields (ParseSchedstat,
// ParseRunDelay). A thread that has ended gives an error, even where its id
// was given to another since.
func (r *SchedReader) Sched(pid, tid int) (run, delay time.Duration, err error) {
	r.taskPath(pid, tid, "schedstat")
	data, err := r.readKept([2]int{pid, tid})
	if err != nil {
		return 0, 0, err
	}
	if run, err = ParseSchedstat(data); err == nil {
		delay, err = ParseRunDelay(data)
	}
	if err != nil {
		return 0, 0, r.pathError("parse", err)
	}
	return run, delay, nil
}

// machineKey is the key of /proc/stat among a SchedReader's files.
var machineKey = [2]int{-1, -1}

// MachineBusy is the CPU time all CPUs have spent busy since boot, summed
// over them: /proc/stat's first line (ParseMachineBusy).
func (r *SchedReader) MachineBusy() (time.Duration, error) {
	r.path = append(append(append(r.path[:0], r.fs.proc...), "/stat"...), 0)
	data, err := r.readKept(machineKey)
	if err != nil {
		return 0, err
	}
	d, err := ParseMachineBusy(data)
	if err != nil {
		return 0, r.pathError("parse", err)
	}
	return d, nil
}

// readOnce reads the file at the path in r.path whole, opening and
// closing it.
func (r *SchedReader) readOnce() ([]byte, error) {
	fd, err := r.open(0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	data, err := r.pread(fd)
	if err != nil {
		return nil, r.pathError("read", err)
	}
	return data, nil
}

// Comm is the command name of thread tid of process pid (0: this
// process), in r's buffer, valid until the next call.
func (r *SchedReader) Comm(pid, tid int) ([]byte, error) {
	r.taskPath(pid, tid, "comm")
	data, err := r.readOnce()
	return bytes.TrimSpace(data), err
}

// kthreadd is the kernel's thread that starts every other kernel thread.
const kthreadd = 2

// KernelThreadIDs lists the kernel's threads (kthreadd's children:
// workqueue workers, softirq threads, the loop and nbd drivers' threads)
// from kthreadd's children file. Each is a process of one thread, so its
// TID is its PID. The slice is r's, valid until the next call.
func (r *SchedReader) KernelThreadIDs() ([]int, error) {
	r.taskPath(kthreadd, kthreadd, "children")
	data, err := r.readKept([2]int{})
	if err != nil {
		return nil, err
	}
	if r.pids, err = appendChildren(r.pids[:0], data); err != nil {
		return nil, r.pathError("parse", err)
	}
	return r.pids, nil
}

// TaskIDs lists the threads of process pid (0: this process) by id, from
// its task directory kept open, into a slice of r's valid until the next
// call.
func (r *SchedReader) TaskIDs(pid int) ([]int, error) {
	key := [2]int{pid, -1}
	r.taskPath(pid, -1, "")
	fd, err := r.kept(key, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	r.tids = r.tids[:0]
	_, err = unix.Seek(fd, 0, 0)
	for err == nil {
		var n int
		if n, err = unix.Getdents(fd, r.buf); n <= 0 {
			break
		}
		r.tids = appendDirentIDs(r.tids, r.buf[:n])
	}
	if err != nil {
		r.drop(key)
		return nil, r.pathError("getdents", err)
	}
	return r.tids, nil
}

// appendDirentIDs appends to dst the entries of buf (linux_dirent64
// records, getdents64(2)) whose names are numbers.
func appendDirentIDs(dst []int, buf []byte) []int {
	const nameOff = 19 // d_ino 8, d_off 8, d_reclen 2, d_type 1
	for len(buf) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < nameOff || reclen > len(buf) {
			break
		}
		name := buf[nameOff:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if id, ok := parseCount(name); ok {
			dst = append(dst, int(id))
		}
		buf = buf[reclen:]
	}
	return dst
}

// Close closes the files r holds open.
func (r *SchedReader) Close() {
	for key := range r.files {
		r.drop(key)
	}
}
