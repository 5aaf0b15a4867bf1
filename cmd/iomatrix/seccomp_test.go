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
)

// denyIOUringSetup installs a seccomp filter on every thread of this
// process that fails io_uring_setup with EPERM, as container runtimes do.
func denyIOUringSetup() error {
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	return nil
}

func init() {
	if os.Getenv("IOMATRIX_TEST_DENY_URING") == "1" {
		if err := denyIOUringSetup(); err != nil {
			panic("seccomp: " + err.Error())
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
	doc, err := iotest.ReadDocument(strings.NewReader(r.stdout))
	if err != nil || doc.Results[0].Engine != "psync" || doc.Settings.Engine != "psync" {
		t.Fatalf("auto under seccomp: %v %+v", err, doc)
	}
	// An explicit uring request fails instead of falling back.
	r = run("uring")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--engine uring") {
		t.Errorf("uring under seccomp: exit %d stderr %q", r.code, r.stderr)
	}
}
