package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/iotest"
)

// Matrix is the pivoted view of a run: one table per (access, block size,
// jobs) for random I/O and one table for sequential I/O.
type Matrix struct {
	Tables []Table
}

// Table has rows and columns of cells; a nil cell was not measured (never
// shown as 0).
type Table struct {
	Title string
	Rows  []string
	Cols  []string
	Cells [][]*float64
}

// Build pivots results into IOPS tables. Random results: rows are read %
// (descending), columns are queue depths (ascending), one table per block
// size and job count. Sequential results form one table: rows read %,
// columns block size × queue depth (× jobs).
func Build(results []iotest.Result) Matrix {
	type key struct {
		bs   int64
		jobs int
	}
	var m Matrix
	groups := map[key][]iotest.Result{}
	var seq []iotest.Result
	for _, r := range results {
		if r.Pattern.Access == iotest.Sequential {
			seq = append(seq, r)
			continue
		}
		k := key{r.Pattern.BlockSize, r.Pattern.Jobs}
		groups[k] = append(groups[k], r)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.bs, b.bs), cmp.Compare(a.jobs, b.jobs))
	})
	for _, k := range keys {
		title := fmt.Sprintf("random %s IOPS", iotest.FormatSize(k.bs))
		if k.jobs > 1 {
			title += fmt.Sprintf(", %d jobs", k.jobs)
		}
		m.Tables = append(m.Tables, pivot(title, groups[k],
			func(r iotest.Result) int { return r.Pattern.QueueDepth },
			func(qd int) string { return fmt.Sprintf("QD%d", qd) },
			func(r iotest.Result) float64 { return r.Total.IOPS }))
	}
	if len(seq) > 0 {
		// Columns of the sequential table combine block size, QD and jobs;
		// encode them in one sortable integer.
		col := func(r iotest.Result) int {
			return int(r.Pattern.BlockSize>>9)<<16 | r.Pattern.QueueDepth<<7 | r.Pattern.Jobs
		}
		label := func(c int) string {
			s := fmt.Sprintf("%s QD%d", strings.ToUpper(iotest.ShortSize(int64(c>>16)<<9)), c>>7&0x1ff)
			if j := c & 0x7f; j > 1 {
				s += fmt.Sprintf("×%d", j)
			}
			return s
		}
		m.Tables = append(m.Tables, pivot("sequential MiB/s", seq, col, label,
			func(r iotest.Result) float64 { return r.Total.MiBPerS }))
	}
	return m
}

func readLabel(pct int) string {
	switch pct {
	case 100:
		return "read"
	case 0:
		return "write"
	}
	return fmt.Sprintf("%d%% read", pct)
}

func pivot(title string, rs []iotest.Result, col func(iotest.Result) int, label func(int) string, value func(iotest.Result) float64) Table {
	var reads, cols []int
	for _, r := range rs {
		if !slices.Contains(reads, r.Pattern.ReadPct) {
			reads = append(reads, r.Pattern.ReadPct)
		}
		if c := col(r); !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	slices.Sort(cols)
	slices.Sort(reads)
	slices.Reverse(reads)
	t := Table{Title: title}
	for _, rd := range reads {
		t.Rows = append(t.Rows, readLabel(rd))
	}
	for _, c := range cols {
		t.Cols = append(t.Cols, label(c))
	}
	t.Cells = make([][]*float64, len(reads))
	for i := range t.Cells {
		t.Cells[i] = make([]*float64, len(cols))
	}
	for _, r := range rs {
		v := value(r)
		t.Cells[slices.Index(reads, r.Pattern.ReadPct)][slices.Index(cols, col(r))] = &v
	}
	return t
}

// WriteText renders the matrix as aligned plain-text tables.
func WriteText(w io.Writer, m Matrix) error {
	for i, t := range m.Tables {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		widths := make([]int, len(t.Cols)+1)
		for _, r := range t.Rows {
			widths[0] = max(widths[0], len(r))
		}
		cell := func(v *float64) string {
			if v == nil {
				return ""
			}
			return thousands(*v)
		}
		for j, c := range t.Cols {
			widths[j+1] = max(widths[j+1], len([]rune(c)))
			for i := range t.Rows {
				widths[j+1] = max(widths[j+1], len(cell(t.Cells[i][j])))
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n", t.Title)
		fmt.Fprintf(&b, "%-*s", widths[0], "")
		for j, c := range t.Cols {
			fmt.Fprintf(&b, "  %*s", widths[j+1], c)
		}
		b.WriteString("\n")
		for i, r := range t.Rows {
			fmt.Fprintf(&b, "%-*s", widths[0], r)
			for j := range t.Cols {
				fmt.Fprintf(&b, "  %*s", widths[j+1], cell(t.Cells[i][j]))
			}
			b.WriteString("\n")
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// thousands renders v rounded to a whole number with comma separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
