package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/session"
)

// exitStatus passes a command's exit status through as iomatrix's own.
type exitStatus = session.ExitStatus

// commandError is an error with the exit status it gives: a check that
// did not hold, or a COMMAND that cannot be run at all (session.CommandError).
type commandError = session.CommandError

type throttleOptions struct {
	Cap    string
	Device string
	PID    int

	deviceSet bool
}

func newThrottleCommand(g *globalOptions) *cobra.Command {
	o := &throttleOptions{}
	cmd := command("throttle", "throttle --cap riops=N,... [--device PATH] (-- COMMAND [ARGS] | --pid PID)",
		"Run a command (or cap a running process) under a cgroup I/O cap", nil, func(cmd *cobra.Command, args []string) error {
			o.deviceSet = cmd.Flags().Changed("device")
			return runThrottle(cmd.Context(), g, o, args)
		})
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
	l, err := parseCapFlag(o.Cap)
	if err != nil {
		return err
	}
	command, err := session.ThrottleWhat(g.sys, o.PID, args)
	if err != nil {
		return err
	}
	dev, notice, err := cgroup.ResolveDevice(g.sys, o.Device)
	if err != nil {
		return o.deviceError(err)
	}
	if os.Geteuid() != 0 {
		return fault.Privilege("throttle needs root or CAP_SYS_ADMIN (cgroups are created through cgroupfs)")
	}
	if notice != "" {
		g.notice(notice)
	}
	l.Device = dev
	th, err := session.NewThrottle(g.sys, *l, o.PID, g.notice)
	if errors.As(err, new(*session.ProcessError)) {
		err = fmt.Errorf("--pid %w", err) // bad input still, when it was
	}
	if err != nil {
		return err
	}
	defer th.Close()
	if o.PID != 0 {
		return th.Process(ctx)
	}
	return th.Command(ctx, command, args, session.Stdio{In: os.Stdin, Out: unwrapped(g.stdout), Err: unwrapped(g.stderr)})
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

// newExecCommand is the shim of throttle: it waits on fd 3 until its
// parent has moved it into the cgroup, then becomes the command.
func newExecCommand() *cobra.Command {
	return &cobra.Command{
		Use:                session.ExecCommand + " PATH ARGV...",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE:               func(_ *cobra.Command, args []string) error { return session.ServeExec(args) },
	}
}
