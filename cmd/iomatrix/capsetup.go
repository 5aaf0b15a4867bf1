package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/session"
)

// capOptions are the flags that put a workload under a cgroup I/O cap.
type capOptions struct {
	Cap    string
	Cgroup string

	// limit is --cap, parsed once by precheck.
	limit *cgroup.Limit
}

func (o *capOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Cap, "cap", "", "run under a fresh cgroup with these I/O limits: riops=N,wiops=N,rbps=SIZE,wbps=SIZE (any subset)")
	f.StringVar(&o.Cgroup, "cgroup", "", "run inside this existing cgroup (e.g. a container's) under the limits configured there")
}

func (o *capOptions) enabled() bool { return o.Cap != "" || o.Cgroup != "" || o.limit != nil }

// precheck validates the flags, parsing the cap into a cgroup.Limit (the
// one place the cap string is read), and the privilege, before anything
// else is looked at.
func (o *capOptions) precheck() error {
	if !o.enabled() || o.limit != nil {
		return nil
	}
	if o.Cap != "" && o.Cgroup != "" {
		return usagef("--cap and --cgroup together: give one (a fresh capped cgroup, or an existing one)")
	}
	if o.Cap != "" {
		l, err := parseCapFlag(o.Cap)
		if err != nil {
			return err
		}
		o.limit = l
	}
	if os.Geteuid() != 0 {
		flag := "--cap"
		if o.Cap == "" {
			flag = "--cgroup"
		}
		return fault.Privilege("%s needs root or CAP_SYS_ADMIN (cgroups are created and joined through cgroupfs)", flag)
	}
	return nil
}

// parseCapFlag turns --cap into the limit it sets: the one place a cap
// string is read (the device is the target's, filled in later).
func parseCapFlag(s string) (*cgroup.Limit, error) {
	l, err := cgroup.ParseCap(s)
	if err != nil {
		return nil, usagef("--cap: %w", err)
	}
	return &l, nil
}

// newChildCommand is the capped child of a measuring command (see
// session.ServeChild).
func newChildCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    session.ChildCommand,
		Short:  "internal: run patterns for a parent iomatrix inside a cgroup",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return session.ServeChild(cmd.Context(), g.sys, os.Stdin, g.stdout)
		},
	}
}
