package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// DescribeSync says what a pattern's durable-write mode (its canonical
// form) does, for a reader.
func DescribeSync(sync string) string {
	kind, n, own := strings.Cut(sync, ":")
	if !own {
		return sync + ": each write completes once it is durable (RWF_DSYNC)"
	}
	n, _, after := strings.Cut(n, ":")
	every := "each write"
	if n != "1" {
		every = "every " + ordinal(n) + " write"
	}
	if after {
		return fmt.Sprintf("%s: %s is followed by an %s issued once the write has completed, its wait counted in that write's latency", sync, every, kind)
	}
	return fmt.Sprintf("%s: %s is followed by an %s, its wait counted in that write's latency", sync, every, kind)
}

// ordinal spells a whole number n as 2nd, 3rd, 8th, 11th, 21st.
func ordinal(n string) string {
	suffix := "th"
	if len(n) < 2 || n[len(n)-2] != '1' {
		switch n[len(n)-1] {
		case '1':
			suffix = "st"
		case '2':
			suffix = "nd"
		case '3':
			suffix = "rd"
		}
	}
	return n + suffix
}

// writeSyncsLine writes a durable-write cell's sync counts.
func writeSyncsLine(w io.Writer, s *results.SyncStats) {
	fmt.Fprintf(w, "syncs: %s submitted, %s completed, %s failed; the sync row is each sync's own wait, from its write's completion\n",
		units.Thousands(float64(s.Submitted), 0), units.Thousands(float64(s.Completed), 0), units.Thousands(float64(s.Failed), 0))
}

// writeDiskLine writes the disk's counters of the window: every
// process's requests, those not iomatrix's (and of those, the ones its
// syncs explain), and its flushes; or why they were not read.
func writeDiskLine(w io.Writer, disk string, d results.DevStats) {
	if d.Uncounted != "" {
		fmt.Fprintf(w, "disk %s: requests %s\n", disk, d.Uncounted)
		return
	}
	fmt.Fprintf(w, "disk %s, all processes: %s requests completed, %.1f%% utilized", disk, units.Thousands(float64(d.IOs), 0), d.UtilPct)
	if d.OtherIOs > 0 {
		fmt.Fprintf(w, " (%s of them not iomatrix's", units.Thousands(float64(d.OtherIOs), 0))
		if d.SyncIOs > 0 {
			fmt.Fprintf(w, ", %s of those explained by its syncs' journal commits", units.Thousands(float64(d.SyncIOs), 0))
		}
		fmt.Fprint(w, ")")
	}
	if d.Flushes > 0 {
		fmt.Fprintf(w, ", %s flushes", units.Thousands(float64(d.Flushes), 0))
	}
	fmt.Fprintln(w)
}
