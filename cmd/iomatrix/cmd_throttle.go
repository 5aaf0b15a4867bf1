package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/report"
)

// exitStatus passes a command's exit status through as iomatrix's own.
type exitStatus struct{ code int }

func (e exitStatus) Error() string { return fmt.Sprintf("command exited with status %d", e.code) }

// commandError is a COMMAND that cannot be run at all, with the status a
// shell gives: 127 when it is not found, 126 when it cannot be executed,
// so a script sees the same status with and without throttle.
type commandError struct {
	code int
	err  error
}

func (e commandError) Error() string { return e.err.Error() }
func (e commandError) Unwrap() error { return e.err }

// lookCommand finds COMMAND as the shell would, before anything is created.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrDot):
		return path, nil // found through "." in $PATH: a shell runs it too
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", commandError{127, fmt.Errorf("%s: command not found", name)}
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
	return "", commandError{126, fmt.Errorf("%s: cannot execute: %w", name, cause)}
}

type throttleOptions struct {
	Cap    string
	Device string
	PID    int

	deviceSet bool
}

func newThrottleCommand(g *globalOptions) *cobra.Command {
	o := &throttleOptions{}
	cmd := &cobra.Command{
		Use:   "throttle --cap riops=N,... [--device PATH] (-- COMMAND [ARGS] | --pid PID)",
		Short: "Run a command (or cap a running process) under a cgroup I/O cap",
		Long: `Run COMMAND inside a fresh cgroup with the given I/O limits on the device
of PATH (default: the current directory's), and remove the cgroup when it
exits; iomatrix exits with the command's status. With --pid, move a
running process into the capped cgroup until Ctrl-C (or until it exits),
then move it back and remove the cgroup.

On cgroup v1, blkio throttling governs direct I/O only: buffered writes
reach the disk later from the kernel's writeback threads and are not
limited. Use O_DIRECT (e.g. dd oflag=direct) or cgroup v2 to cap writes.

` + exitStatusHelp + `

With a COMMAND, the exit status is the command's; 127 when COMMAND is not
found and 126 when it cannot be executed, as in a shell.`,
		Example: `  iomatrix throttle --cap wiops=500 -- dd if=/dev/zero of=/tmp/x bs=4k count=1000 oflag=direct
  iomatrix throttle --cap riops=2000,rbps=50MiB --device /dev/nvme0n1 --pid 4242`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.deviceSet = cmd.Flags().Changed("device")
			return runThrottle(cmd.Context(), g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Cap, "cap", "", "limits: riops=N,wiops=N,rbps=SIZE,wbps=SIZE (any subset)")
	f.StringVar(&o.Device, "device", ".", "a block device, or a path on the filesystem whose device to cap")
	f.IntVar(&o.PID, "pid", 0, "cap this running process instead of running a command")
	return cmd
}

func runThrottle(ctx context.Context, g *globalOptions, o *throttleOptions, args []string) error {
	if o.Cap == "" {
		return usagef("--cap: required (riops=N,wiops=N,rbps=SIZE,wbps=SIZE)")
	}
	l, err := cgroup.ParseCap(o.Cap)
	if err != nil {
		return usagef("--cap: %w", err)
	}
	switch {
	case o.PID != 0 && len(args) > 0:
		return usagef("--pid and a COMMAND together: give one")
	case o.PID == 0 && len(args) == 0:
		return usagef("give a COMMAND after -- or a --pid to cap")
	case o.PID < 0:
		return usagef("--pid: %d is not a process id", o.PID)
	}
	if o.PID != 0 {
		if !sysfs.Default().ProcessExists(o.PID) {
			return usagef("--pid: no process %d", o.PID)
		}
	}
	var command string
	if len(args) > 0 {
		if command, err = lookCommand(args[0]); err != nil {
			return err
		}
	}
	dev, notice, err := cgroup.ResolveDevice(sysfs.Default(), o.Device)
	if err != nil {
		return o.deviceError(err)
	}
	if os.Geteuid() != 0 {
		return privilegeError{"throttle needs root or CAP_SYS_ADMIN (cgroups are created through cgroupfs)"}
	}
	ctrl, err := detectCgroups()
	if err != nil {
		return cgroupError(err)
	}
	var orig string
	if o.PID != 0 {
		if orig, err = ownCgroup(ctrl, o.PID); err != nil {
			return err
		}
	}
	if notice != "" {
		fmt.Fprintf(g.stderr, "iomatrix: %s\n", notice)
	}
	l.Device = dev
	grp, err := cgroup.Create(ctrl, l)
	if err != nil {
		return cgroupError(err)
	}
	defer func() {
		// A command that left children behind leaves them capped: say so.
		if err := grp.Delete(); err != nil {
			fmt.Fprintf(g.stderr, "iomatrix: warning: %v\n", err)
		}
	}()
	capText := report.DescribeCap(l.Record(ctrl.Version, grp.Path))
	if w := writebackWarning(ctrl.Version, grp.Enabled()); w != "" {
		fmt.Fprintf(g.stderr, "iomatrix: warning: %s\n", w)
	}
	if o.PID != 0 {
		return throttlePID(ctx, g, grp, o.PID, orig, capText)
	}
	return throttleCommand(ctx, g, grp, command, args, capText)
}

// writebackWarning says when buffered writes escape the cap. Writeback is
// done later by the kernel's flusher threads: cgroup v1 never charges it
// to the cgroup that dirtied the pages; cgroup v2 does when the cgroup has
// both the memory and the io controllers (iomatrix enables memory where
// the hierarchy offers it).
func writebackWarning(version int, enabled []string) string {
	switch {
	case version == 1:
		return "cgroup v1 limits direct I/O only; buffered writes of the command are not throttled"
	case !slices.Contains(enabled, "memory"):
		return "cgroup v2 charges buffered writes to a cgroup only when its memory controller is on, and this hierarchy does not offer it here: buffered writes of the command are not throttled"
	}
	return ""
}

// deviceError words a device that cannot be capped: the user's --device,
// or the current directory when --device was not given, which the user
// may not know was used.
func (o *throttleOptions) deviceError(err error) error {
	if o.deviceSet {
		return usagef("--device: %w", err)
	}
	cwd, _ := os.Getwd()
	var nb *cgroup.NoBlockDeviceError
	if errors.As(err, &nb) {
		return usagef("the current directory %s (default of --device) is on %s, which has no block device to cap: give --device with a block device or a path on the disk to cap", cwd, nb.Filesystem)
	}
	return usagef("the current directory %s (default of --device): %w; give --device", cwd, err)
}

// throttleCommand starts the command through a small shim that waits until
// it has been moved into the cgroup, then execs the command: so its first
// I/O is already capped, on v1 as on v2.
func throttleCommand(ctx context.Context, g *globalOptions, grp *cgroup.Group, path string, args []string, capText string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	gate, release, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append([]string{"__exec", path}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, unwrapped(g.stdout), unwrapped(g.stderr)
	cmd.ExtraFiles = []*os.File{gate}
	if err := cmd.Start(); err != nil {
		gate.Close()
		release.Close()
		return fmt.Errorf("start %s: %w", args[0], err)
	}
	gate.Close()
	if err := grp.AddProc(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		release.Close()
		_ = cmd.Wait() // it was killed before it ran the command
		return err
	}
	fmt.Fprintf(g.stderr, "iomatrix: running %s under %s (cgroup %s)\n", args[0], capText, grp.Path)
	// A shim that cannot read the go-ahead refuses to run the command, and
	// its exit status says so: nothing to add here.
	_, _ = release.Write([]byte{1})
	release.Close()
	// Signals that reach iomatrix are passed on; the command decides.
	stop := context.AfterFunc(ctx, func() {
		sig := os.Signal(syscall.SIGTERM)
		if se, ok := context.Cause(ctx).(signalError); ok {
			sig = se.sig
		}
		cmd.Process.Signal(sig)
	})
	defer stop()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitStatus{128 + int(ws.Signal())}
		}
		return exitStatus{ee.ExitCode()}
	}
	return err
}

// throttlePID caps a running process until Ctrl-C or its exit, then puts
// it back where it was (orig), or, were that cgroup gone meanwhile, in its
// nearest ancestor: the process never stays capped when iomatrix ends.
func throttlePID(ctx context.Context, g *globalOptions, grp *cgroup.Group, pid int, orig, capText string) error {
	if err := grp.AddProc(pid); err != nil {
		return cgroupError(err)
	}
	fmt.Fprintf(g.stderr, "iomatrix: pid %d capped at %s until Ctrl-C (cgroup %s)\n", pid, capText, grp.Path)
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
				fmt.Fprintf(g.stderr, "iomatrix: pid %d released to %s: its cgroup %s is gone\n", pid, back, orig)
			} else {
				fmt.Fprintf(g.stderr, "iomatrix: pid %d released back to %s\n", pid, orig)
			}
			return ctx.Err()
		case <-tick.C:
			if !sysfs.Default().ProcessExists(pid) {
				fmt.Fprintf(g.stderr, "iomatrix: pid %d exited\n", pid)
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
// hierarchy. A process in a systemd unit is refused on v2: moving it out
// would take it out of its unit and of the limits systemd sets there.
func ownCgroup(ctrl cgroup.Controller, pid int) (string, error) {
	sys := sysfs.Default()
	entries, err := sys.Cgroups(pid)
	if err != nil {
		return "", fmt.Errorf("--pid %d: %w", pid, err)
	}
	for _, e := range entries {
		v1 := ctrl.Version == 1 && slices.Contains(e.Controllers, "blkio")
		v2 := ctrl.Version == 2 && e.ID == 0
		if !v1 && !v2 {
			continue
		}
		if unit := cgroup.SystemdUnit(e.Path); v2 && unit != "" && sys.ProcessName(1) == "systemd" {
			return "", usagef("--pid %d: the process runs in systemd unit %s, which keeps it in its own cgroup: moving it out would drop the unit's own limits. "+
				"Cap the unit instead (systemctl set-property %s IOReadIOPSMax=… IOWriteIOPSMax=…), or run the command under iomatrix throttle -- COMMAND", pid, unit, unit)
		}
		return filepath.Join(ctrl.Dir, e.Path), nil
	}
	return "", fmt.Errorf("--pid %d: no cgroup in the I/O controller's hierarchy", pid)
}

// newExecCommand is the shim of throttle: it waits on fd 3 until its
// parent has moved it into the cgroup, then becomes the command.
func newExecCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "__exec PATH ARGV...",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("__exec PATH ARGV...")
			}
			gate := os.NewFile(3, "gate")
			var b [1]byte
			if n, _ := gate.Read(b[:]); n != 1 {
				return errors.New("not placed in the cgroup: not running the command")
			}
			gate.Close()
			return syscall.Exec(args[0], args[1:], os.Environ())
		},
	}
}
