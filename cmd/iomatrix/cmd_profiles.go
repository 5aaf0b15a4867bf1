package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/profiles"
)

func newProfilesCommand(g *globalOptions) *cobra.Command {
	var runtime, ramp time.Duration
	cmd := command("profiles", "profiles [NAME|FILE]", "List the sweep profiles, or show the patterns of one", maxArgs(1), func(cmd *cobra.Command, args []string) error {
		return profiles.Show(g.stdout, args, runtime, ramp)
	})
	durationVar(cmd.Flags(), &runtime, "runtime", 60*time.Second, "runtime per pattern for the estimate (a bare number is seconds)")
	durationVar(cmd.Flags(), &ramp, "ramp", 5*time.Second, "ramp per pattern for the estimate (a bare number is seconds)")
	return cmd
}
