package cgroup

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/iomatrix/iomatrix/internal/units"
)

// WriteConfigured writes the limits Show found under ctrl as a table: one
// row per cgroup and device, "-" where a limit is not set.
func WriteConfigured(w io.Writer, ctrl Controller, list []Configured) error {
	fmt.Fprintf(w, "cgroup v%d I/O controller at %s (%s mode)\n", ctrl.Version, ctrl.Dir, ctrl.Mode)
	if len(list) == 0 {
		fmt.Fprintln(w, "no I/O limits configured")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CGROUP\tDEVICE\tRIOPS\tWIOPS\tRBPS\tWBPS")
	v := func(n uint64, size bool) string {
		switch {
		case n == 0:
			return "-"
		case size:
			return units.FormatSize(int64(n)) + "/s"
		}
		return strconv.FormatUint(n, 10)
	}
	for _, c := range list {
		name := c.Cgroup
		if name == "" {
			name = "/"
		}
		l := c.Limit
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, l.Device, v(l.ReadIOPS, false), v(l.WriteIOPS, false), v(l.ReadBPS, true), v(l.WriteBPS, true))
	}
	return tw.Flush()
}
