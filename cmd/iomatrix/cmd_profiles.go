package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/profiles"
)

type profilesOptions struct {
	Runtime time.Duration
	Ramp    time.Duration
}

func newProfilesCommand(g *globalOptions) *cobra.Command {
	o := &profilesOptions{}
	cmd := command("profiles", "profiles [NAME|FILE]", "List the sweep profiles, or show the patterns of one", maxArgs(1), func(cmd *cobra.Command, args []string) error {
		if o.Runtime <= 0 {
			return usagef("--runtime: must be positive")
		}
		if o.Ramp < 0 {
			return usagef("--ramp: must not be negative")
		}
		if len(args) == 0 {
			return listProfiles(g, o)
		}
		p, err := profiles.Load(args[0])
		if err != nil {
			return fault.AsInput(err)
		}
		return showProfile(g, o, p)
	})
	durationVar(cmd.Flags(), &o.Runtime, "runtime", 60*time.Second, "runtime per pattern for the estimate (a bare number is seconds)")
	durationVar(cmd.Flags(), &o.Ramp, "ramp", 5*time.Second, "ramp per pattern for the estimate (a bare number is seconds)")
	return cmd
}

func listProfiles(g *globalOptions, o *profilesOptions) error {
	return profiles.WriteList(g.stdout, o.Runtime, o.Ramp)
}

func showProfile(g *globalOptions, o *profilesOptions, p *profiles.Profile) error {
	return p.WriteTable(g.stdout, o.Runtime, o.Ramp)
}
