package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// WriteReplayText writes a replay's result as text: the run's figures,
// then the replay beside its trace (I/Os, sizes, read share, and the
// I/Os of each second).
func WriteReplayText(w io.Writer, doc *results.Document, r *results.Result) error {
	if err := WriteRunText(w, doc, r); err != nil {
		return err
	}
	rp := r.Replay
	if rp == nil {
		return nil
	}
	fmt.Fprintf(w, "\nreplay of %s (%s", rp.Trace, rp.Format)
	if rp.Device != "" {
		fmt.Fprintf(w, ", %s", rp.Device)
	}
	fmt.Fprintf(w, ") at speed %s over %s", units.Thousands(rp.Speed, 2), time.Duration(rp.SpanNS).Round(time.Millisecond))
	if rp.Untimed {
		fmt.Fprint(w, " (no times recorded: every I/O due at once)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-10s %10s %10s %12s %12s\n", "", "I/Os", "read %", "read bytes", "write bytes")
	share := func(reads, ios uint64) string {
		if ios == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", 100*float64(reads)/float64(ios))
	}
	fmt.Fprintf(w, "%-10s %10d %10s %12d %12d\n", "trace", rp.IOs, share(rp.Reads, rp.IOs), rp.ReadBytes, rp.WriteBytes)
	fmt.Fprintf(w, "%-10s %10d %10s %12d %12d\n", "replayed", r.Total.IOs, share(r.Read.IOs, r.Total.IOs), r.Read.Bytes, r.Write.Bytes)
	fmt.Fprintf(w, "%-10s %21s %25s\n", "size", "trace reads/writes", "replayed reads/writes")
	for _, s := range rp.Sizes {
		size := units.FormatSize(s.Size)
		if s.Size == 0 {
			size = "other"
		}
		fmt.Fprintf(w, "%-10s %21s %25s\n", size, fmt.Sprintf("%d/%d", s.TraceReads, s.TraceWrites), fmt.Sprintf("%d/%d", s.ReadIOs, s.WriteIOs))
	}
	fmt.Fprintln(w, "I/Os per second, trace (recorded starts) / replay (completions):")
	fmt.Fprintf(w, "  %s\n", perSecond(rp.TracePerSecond, rp.PerSecond))
	if sk := rp.Skipped; sk.Flushes+sk.Discards+sk.Empty > 0 {
		fmt.Fprintf(w, "skipped: %d flushes or syncs, %d discards or trims, %d without data\n", sk.Flushes, sk.Discards, sk.Empty)
	}
	if rp.Wrapped+rp.Realigned > 0 {
		fmt.Fprintf(w, "offsets: %d I/Os moved to fit the target, %d aligned to it (offset_rule in the results)\n", rp.Wrapped, rp.Realigned)
	}
	return nil
}

// perSecond pairs the trace's counts of each second with the replay's:
// "1000/998 1000/1001 …".
func perSecond(trace, replay []uint64) string {
	n := max(len(trace), len(replay))
	parts := make([]string, n)
	at := func(s []uint64, i int) string {
		if i < len(s) {
			return fmt.Sprint(s[i])
		}
		return "-"
	}
	for i := range parts {
		parts[i] = at(trace, i) + "/" + at(replay, i)
	}
	return strings.Join(parts, " ")
}
