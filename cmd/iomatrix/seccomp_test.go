package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// denySyscall installs a seccomp filter on every thread of this process
// that fails syscall nr with errno, as container runtimes do (io_uring
// refused with EPERM; clone3 with ENOSYS, or EPERM in older profiles).
func denySyscall(nr uintptr, errno unix.Errno) error {
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return e
	}
	return nil
}

func init() {
	deny := map[string]struct {
		nr    uintptr
		errno unix.Errno
	}{
		"IOMATRIX_TEST_DENY_URING":         {unix.SYS_IO_URING_SETUP, unix.EPERM},
		"IOMATRIX_TEST_DENY_CLONE3_ENOSYS": {unix.SYS_CLONE3, unix.ENOSYS},
	}
	for env, d := range deny {
		if os.Getenv(env) == "1" {
			if err := denySyscall(d.nr, d.errno); err != nil {
				panic("seccomp: " + err.Error())
			}
		}
	}
}

// A capped run never needs clone3: the child is started outside the
// cgroup and moved in by its parent through cgroup.procs, so kernels
// before 5.7 and the seccomp profiles that refuse clone3 with ENOSYS run
// it as well. (A profile that answers EPERM breaks glibc's own thread
// creation, which falls back to clone only on ENOSYS: every cgo-linked
// program fails there, this test binary included; a CGO_ENABLED=0 build
// of iomatrix does not.)
func TestCappedRunWithoutClone3(t *testing.T) {
	c := capController(t)
	target := filepath.Join(t.TempDir(), "c.dat")
	if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "16MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, env := range []string{"IOMATRIX_TEST_DENY_CLONE3_ENOSYS"} {
		cmd := iomatrixCmd(t, "run", target, "--cap", "riops=2000", "--runtime", "300ms", "--ramp", "250ms", "--format", "json")
		cmd.Env = append(cmd.Env, env+"=1")
		r := runIomatrix(t, cmd)
		if r.code != 0 {
			t.Errorf("%s: exit %d: %s", env, r.code, r.stderr)
			continue
		}
		doc, err := results.ReadDocument(strings.NewReader(r.stdout))
		if err != nil || doc.Cap == nil || doc.Results[0].CgroupIOs == nil || doc.Results[0].CgroupIOs.Reads == 0 {
			t.Errorf("%s: the child did not run in the cgroup: %v %+v", env, err, doc)
		}
		if l := leftovers(c, cmd.Process.Pid); len(l) > 0 {
			t.Errorf("%s: left %v", env, l)
		}
	}
}

func TestAutoFallsBackToPsyncUnderSeccomp(t *testing.T) {
	testenv.Root(t)
	testenv.Require(t, iotest.ProbeUring() == nil, "io_uring unavailable even without seccomp")
	target := filepath.Join(t.TempDir(), "f.dat")
	run := func(engine string) cmdResult {
		cmd := iomatrixCmd(t, "run", target, "--size", "16MiB", "--runtime", "200ms", "--ramp", "0s", "--engine", engine, "--format", "json")
		cmd.Env = append(cmd.Env, "IOMATRIX_TEST_DENY_URING=1")
		return runIomatrix(t, cmd)
	}
	r := run("auto")
	if r.code != 0 {
		t.Fatalf("auto: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var notices []string
	for _, l := range lines {
		if strings.Contains(l, "io_uring") {
			notices = append(notices, l)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "psync") {
		t.Errorf("want one notice naming the fallback, stderr %q", r.stderr)
	}
	doc, err := results.ReadDocument(strings.NewReader(r.stdout))
	if err != nil || doc.Results[0].Engine != "psync" || doc.Settings.Engine != "psync" {
		t.Fatalf("auto under seccomp: %v %+v", err, doc)
	}
	// An explicit uring request fails instead of falling back.
	r = run("uring")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--engine uring") {
		t.Errorf("uring under seccomp: exit %d stderr %q", r.code, r.stderr)
	}
}
