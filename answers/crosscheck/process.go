package crosscheck

import (
	"bytes"
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Process is what one run of a tool left behind.
type Process struct {
	Stdout, Stderr []byte
	// CPU is the user+sys time the kernel charged to the process, its
	// threads and the children it waited for (wait4's rusage).
	CPU  time.Duration
	Wall time.Duration
	Err  error // why it did not exit with status 0
}

// childGrace is how long a stopped run has between SIGTERM and SIGKILL:
// fio and iomatrix both stop their I/O and exit well within it.
const childGrace = 10 * time.Second

// RunProcess runs argv to its end in a process group of its own, so that
// stopping it when ctx is done reaches fio's job processes too: SIGTERM to
// the group, SIGKILL after childGrace.
func RunProcess(ctx context.Context, argv []string) Process {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = childGrace
	start := time.Now()
	err := cmd.Run()
	r := Process{Stdout: out.Bytes(), Stderr: errb.Bytes(), Wall: time.Since(start), Err: err}
	if cmd.ProcessState == nil {
		return r // never started
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if ctx.Err() != nil {
		// A job process that outlived its stopped fio must not go on
		// loading the disk. ESRCH, none left, is the usual answer.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return r
}
