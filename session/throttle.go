package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/report"
)

// ExecCommand is the hidden command of this program that starts a
// throttled command: the command line must run ServeExec for it.
const ExecCommand = "__exec"

// ExitStatus is a throttled command's exit status, passed through as
// this program's own.
type ExitStatus struct{ Code int }

func (e ExitStatus) Error() string { return fmt.Sprintf("command exited with status %d", e.Code) }

// CommandError is an error with the exit status it gives.
type CommandError struct {
	Code int
	Err  error
}

func (e *CommandError) Error() string { return e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// LookCommand finds a command as the shell would, before anything is
// created: its path, or a CommandError with the status a shell gives,
// 127 when it is not found, 126 when it cannot be executed, so that a
// script sees the same status with and without throttle.
func LookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrDot):
		return path, nil // found through "." in $PATH: a shell runs it too
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", &CommandError{127, fmt.Errorf("%s: command not found", name)}
	}
	// Found but not runnable: no execute permission, a directory. The
	// cause is the bare errno, so that the name is said once, first.
	cause := err
	var ee *exec.Error
	if errors.As(cause, &ee) {
		cause = ee.Err
	}
	var pe *fs.PathError
	if errors.As(cause, &pe) {
		cause = pe.Err
	}
	return "", &CommandError{126, fmt.Errorf("%s: cannot execute: %w", name, cause)}
}

// ThrottleWhat checks what throttle is to cap, before anything is made:
// the running process pid, or the command args (its path found, as
// LookCommand), one of them. A choice that cannot be is bad input of
// the option "pid", or mentions it.
func ThrottleWhat(sys sysfs.FS, pid int, args []string) (command string, err error) {
	pidOpt := func(n fault.Namer) string { return n("pid") }
	switch {
	case pid != 0 && len(args) > 0:
		return "", fault.AsInput(fault.NewMention(func(n fault.Namer) string { return pidOpt(n) + " and a COMMAND together: give one" }))
	case pid == 0 && len(args) == 0:
		return "", fault.AsInput(fault.NewMention(func(n fault.Namer) string { return "give a COMMAND after -- or a " + pidOpt(n) + " to cap" }))
	case pid < 0:
		return "", fault.Input("pid", "%d is not a process id", pid)
	case pid != 0 && !sys.ProcessExists(pid):
		return "", fault.Input("pid", "no process %d", pid)
	case pid != 0:
		return "", nil
	}
	return LookCommand(args[0])
}

// Throttle is a fresh cgroup with a limit, made to cap a command or a
// running process.
type Throttle struct {
	Group *cgroup.Group
	sys   sysfs.FS
	// pid is the running process to cap (0: a command), orig its cgroup.
	pid     int
	orig    string
	capText string
	notice  func(string)
}

// ProcessError is about the running process PID.
type ProcessError struct {
	PID int
	Err error
}

func (e *ProcessError) Error() string { return fmt.Sprintf("%d: %v", e.PID, e.Err) }
func (e *ProcessError) Unwrap() error { return e.Err }

// NewThrottle makes the cgroup of limit (its device set) under the
// host's I/O controller, for the running process pid (0: for a command,
// Command), and warns on notice when buffered writes escape the cap.
// Processes and their cgroups are read in sys. Close must follow. What
// keeps pid from being capped is a ProcessError.
func NewThrottle(sys sysfs.FS, limit cgroup.Limit, pid int, notice func(string)) (*Throttle, error) {
	ctrl, err := controller(sys)
	if err != nil {
		return nil, err
	}
	t := &Throttle{sys: sys, pid: pid, notice: notice}
	if pid != 0 {
		if t.orig, err = ownCgroup(sys, ctrl, pid); err != nil {
			return nil, err
		}
	}
	if t.Group, err = cgroup.Create(ctrl, limit); err != nil {
		return nil, cgroupError(err)
	}
	t.capText = report.DescribeCap(limit.Record(ctrl.Version, t.Group.Path))
	if w := writebackWarning(ctrl.Version, t.Group.Enabled()); w != "" {
		notice("warning: " + w)
	}
	return t, nil
}

// Close deletes the cgroup; a command that left children behind leaves
// them capped, and the notice says so.
func (t *Throttle) Close() {
	if err := t.Group.Delete(); err != nil {
		t.notice(fmt.Sprintf("warning: %v", err))
	}
}

// writebackWarning says when buffered writes escape the cap ("" when
// they do not). Writeback is done later by the kernel's flusher threads:
// cgroup v1 never charges it to the cgroup that dirtied the pages; cgroup
// v2 does when the cgroup has both the memory and the io controllers
// (iomatrix enables memory where the hierarchy offers it).
func writebackWarning(version int, enabled []string) string {
	switch {
	case version == 1:
		return "cgroup v1 limits direct I/O only; buffered writes of the command are not throttled"
	case !slices.Contains(enabled, "memory"):
		return "cgroup v2 charges buffered writes to a cgroup only when its memory controller is on, and this hierarchy does not offer it here: buffered writes of the command are not throttled"
	}
	return ""
}

// Stdio are a throttled command's standard streams.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Signaled is the cause of a context cancelled by a signal: the signal
// is passed on to a throttled command.
type Signaled interface{ Signal() os.Signal }

// Command runs path with args (args[0] its name) in the cgroup until it
// exits, and returns its exit status as an ExitStatus. It starts through
// a small shim (ExecCommand) that waits until it has been moved into the
// cgroup, then execs the command: so its first I/O is already capped, on
// v1 as on v2. A signal that ends ctx (its cause a Signaled) is passed on;
// the command decides.
func (t *Throttle) Command(ctx context.Context, path string, args []string, stdio Stdio) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	gate, release, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append([]string{ExecCommand, path}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	cmd.ExtraFiles = []*os.File{gate}
	if err := cmd.Start(); err != nil {
		gate.Close()
		release.Close()
		return fmt.Errorf("start %s: %w", args[0], err)
	}
	gate.Close()
	if err := t.Group.AddProc(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		release.Close()
		_ = cmd.Wait() // it was killed before it ran the command
		return err
	}
	t.notice(fmt.Sprintf("running %s under %s (cgroup %s)", args[0], t.capText, t.Group.Path))
	// A shim that cannot read the go-ahead refuses to run the command, and
	// its exit status says so: nothing to add here.
	_, _ = release.Write([]byte{1})
	release.Close()
	stop := context.AfterFunc(ctx, func() {
		sig := os.Signal(syscall.SIGTERM)
		var s Signaled
		if errors.As(context.Cause(ctx), &s) {
			sig = s.Signal()
		}
		cmd.Process.Signal(sig)
	})
	defer stop()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ExitStatus{128 + int(ws.Signal())}
		}
		return ExitStatus{ee.ExitCode()}
	}
	return err
}

// ServeExec is the shim of Command: it waits on fd 3 until its parent has
// moved it into the cgroup, then becomes the command (args: its path,
// then its argv).
func ServeExec(args []string) error {
	if len(args) < 2 {
		return fault.Input("", "%s PATH ARGV...", ExecCommand)
	}
	gate := os.NewFile(3, "gate")
	var b [1]byte
	if n, _ := gate.Read(b[:]); n != 1 {
		return errors.New("not placed in the cgroup: not running the command")
	}
	gate.Close()
	return syscall.Exec(args[0], args[1:], os.Environ())
}

// Process caps the running process pid until ctx ends or the process
// exits, then puts it back where it was (orig, see ownCgroup), or, were
// that cgroup gone meanwhile, in its nearest ancestor: the process never
// stays capped when iomatrix ends.
func (t *Throttle) Process(ctx context.Context) error {
	grp, pid, orig := t.Group, t.pid, t.orig
	if err := grp.AddProc(pid); err != nil {
		return cgroupError(err)
	}
	t.notice(fmt.Sprintf("pid %d capped at %s until Ctrl-C (cgroup %s)", pid, t.capText, grp.Path))
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			back, err := moveBack(pid, orig, strings.TrimSuffix(grp.Path, "/"+grp.Name))
			if err != nil {
				return fmt.Errorf("move pid %d back to %s: %w (it is still capped in %s)", pid, orig, err, grp.Path)
			}
			if back != orig {
				t.notice(fmt.Sprintf("pid %d released to %s: its cgroup %s is gone", pid, back, orig))
			} else {
				t.notice(fmt.Sprintf("pid %d released back to %s", pid, orig))
			}
			return ctx.Err()
		case <-tick.C:
			if !t.sys.ProcessExists(pid) {
				t.notice(fmt.Sprintf("pid %d exited", pid))
				return nil
			}
		}
	}
}

// moveBack puts pid in dir, or in dir's nearest ancestor below top that
// still exists, and returns where it went.
func moveBack(pid int, dir, top string) (string, error) {
	for {
		err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == top || !strings.HasPrefix(dir, top) {
			return dir, err
		}
		dir = filepath.Dir(dir)
	}
}

// ownCgroup is the directory of pid's cgroup in the controller's
// hierarchy; its errors are ProcessErrors. A process in a systemd unit is refused on v2: moving it out
// would take it out of its unit and of the limits systemd sets there.
func ownCgroup(sys sysfs.FS, ctrl cgroup.Controller, pid int) (string, error) {
	entries, err := sys.Cgroups(pid)
	if err != nil {
		return "", &ProcessError{pid, err}
	}
	for _, e := range entries {
		v1 := ctrl.Version == 1 && slices.Contains(e.Controllers, "blkio")
		v2 := ctrl.Version == 2 && e.ID == 0
		if !v1 && !v2 {
			continue
		}
		if unit := cgroup.SystemdUnit(e.Path); v2 && unit != "" && sys.ProcessName(1) == "systemd" {
			return "", fault.AsInput(&ProcessError{pid, fmt.Errorf("the process runs in systemd unit %s, which keeps it in its own cgroup: moving it out would drop the unit's own limits. "+
				"Cap the unit instead (systemctl set-property %s IOReadIOPSMax=… IOWriteIOPSMax=…), or start the command under iomatrix throttle instead", unit, unit)})
		}
		return filepath.Join(ctrl.Dir, e.Path), nil
	}
	return "", &ProcessError{pid, errors.New("no cgroup in the I/O controller's hierarchy")}
}

// controller finds the host's I/O controller (DetectCgroups), a refusal
// in the terms of the exit status.
func controller(sys sysfs.FS) (cgroup.Controller, error) {
	ctrl, err := DetectCgroups(sys)
	return ctrl, cgroupError(err)
}
