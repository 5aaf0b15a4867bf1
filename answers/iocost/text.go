package iocost

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Report is what `iocost model` prints: the lines, how each figure was
// derived, and the model against every cell.
type Report struct {
	ModelLine string  `json:"model_line"`
	QoSLine   string  `json:"qos_line,omitempty"`
	Derived   Derived `json:"derived"`
	Check     Check   `json:"check"`
}

// NewReport puts a derivation and its check together.
func NewReport(d Derived, ch Check) Report {
	r := Report{ModelLine: d.Model.Line(d.Device), Derived: d, Check: ch}
	if d.QoS != nil {
		r.QoSLine = d.QoS.Line(d.Device)
	}
	return r
}

// WriteText renders the report for a person.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "io.cost.model:\n  %s\n", r.ModelLine)
	if r.QoSLine != "" {
		fmt.Fprintf(&b, "io.cost.qos:\n  %s\n", r.QoSLine)
	} else {
		b.WriteString("io.cost.qos: not derived (see the notes)\n")
	}
	b.WriteString("\nhow each figure was derived:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range append(append([]Figure(nil), r.Derived.Figures...), r.Derived.QoSFigures...) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Name, formatValue(f.Value), f.Cell, f.How)
	}
	_ = tw.Flush() // into a strings.Builder, which does not fail
	fmt.Fprintf(&b, "\nthe model against every cell (predicted at full vrate; random cells seek over %s):\n", size(r.Check.SpanBytes))
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cell\tpredicted IOPS\tmeasured IOPS\tmeasured/predicted\t\t")
	for _, c := range r.Check.Cells {
		mark := ""
		switch {
		case c.Judged:
			mark = "judged"
		case c.Capacity:
			mark = "capacity, too few in flight"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.3f\t%s\t\n", c.Name, c.Predicted, c.Measured, c.Ratio, mark)
	}
	_ = tw.Flush() // into a strings.Builder, which does not fail
	fmt.Fprintf(&b, "(judged: the cell with the most IOPS of its shape, with at least %d I/Os in flight; the others were held by their concurrency or the device's latency, and say little of the model)\n", MinJudgedConcurrency)
	if len(r.Check.Worst) > 0 {
		b.WriteString("\nwhere the model is most optimistic (judged cells):\n")
		for _, c := range r.Check.Worst {
			fmt.Fprintf(&b, "  %s: measured %.0f, predicted %.0f (%.1f %%)\n", c.Name, c.Measured, c.Predicted, 100*c.Ratio)
		}
		fmt.Fprintf(&b, "honest vrate: %.2f %% (io.cost.qos max=%.2f keeps the model within what was measured)\n", r.Check.HonestVratePct, r.Check.HonestVratePct)
	} else {
		b.WriteString("\nthe model is optimistic for no judged cell: honest at full vrate\n")
	}
	notes := append(append([]string(nil), r.Derived.Notes...), r.Check.Notes...)
	if len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValue(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
