package profiles

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
)

// Show writes, for no name, the built-in profiles (WriteList), and for
// one name or file, that profile (WriteTable), with the time a sweep takes
// at runtime + ramp per pattern. A runtime that is not positive, a
// negative ramp and a profile that cannot be loaded are bad input.
func Show(w io.Writer, names []string, runtime, ramp time.Duration) error {
	if runtime <= 0 {
		return fault.Input("runtime", "must be positive")
	}
	if ramp < 0 {
		return fault.Input("ramp", "must not be negative")
	}
	if len(names) == 0 {
		return WriteList(w, runtime, ramp)
	}
	p, err := Load(names[0])
	if err != nil {
		return fault.AsInput(err)
	}
	return p.WriteTable(w, runtime, ramp)
}

// WriteList writes the built-in profiles as a table: name, patterns, the
// time a sweep of each takes at runtime + ramp per pattern, description.
func WriteList(w io.Writer, runtime, ramp time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PROFILE\tPATTERNS\tDURATION\tDESCRIPTION\n")
	for _, name := range Names() {
		p, err := Builtin(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Name, p.Cells(), p.Estimate(runtime, ramp), p.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\ndurations at %s runtime + %s ramp per pattern; `iomatrix profiles NAME` lists the patterns\n", runtime, ramp)
	return err
}

// WriteTable writes p and its patterns as a table, with the time a sweep
// takes at runtime + ramp per pattern.
func (p *Profile) WriteTable(w io.Writer, runtime, ramp time.Duration) error {
	loads := ""
	if n := p.Cells() - len(p.Patterns); n > 0 {
		loads = " and " + units.Count(n, "open-loop load")
	}
	fmt.Fprintf(w, "%s: %s (%s)\n%s%s, %s at %s runtime + %s ramp each\n\n",
		p.Name, p.Description, p.Source, units.Count(len(p.Patterns), "pattern"), loads, p.Estimate(runtime, ramp), runtime, ramp)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "NAME\tACCESS\tBLOCK\tREAD %%\tQD\tJOBS\t\n")
	for _, pat := range p.Patterns {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t\n", pat.Name(), pat.Access, units.FormatSize(pat.BlockSize), pat.ReadPct, pat.QueueDepth, pat.Jobs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range p.Loads {
		shares := make([]string, len(l.Shares))
		for i, x := range l.Shares {
			shares[i] = units.FormatPercent(x)
		}
		if _, err := fmt.Fprintf(w, "then %s open-loop at %s of the IOPS it measured\n", l.Shape.Name(), strings.Join(shares, ", ")); err != nil {
			return err
		}
	}
	for _, n := range p.Nomerges {
		if _, err := fmt.Fprintf(w, "%s runs with the disk's nomerges at %d (sweep sets it for the cell, and puts it back after)\n", n.Shape.Name(), n.Value); err != nil {
			return err
		}
	}
	how := "the profile's reference: key"
	switch {
	case p.Reference != nil:
	case plainRead(p.Sentinel()):
		how = "by default: the plain random read of the smallest block size, deepest queue up to 32"
	default:
		how = "by default: the first pattern, the profile has no plain random read"
	}
	_, err := fmt.Fprintf(w, "sentinel (a sweep's watch over its device): %s (%s)\n", p.Sentinel().Name(), how)
	return err
}
