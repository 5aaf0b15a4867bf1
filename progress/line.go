// Package progress shows a running measurement on a terminal: one live
// status line, or a sweep's bar with its ETA; without a terminal, plain
// lines of finished patterns only, with no control characters.
package progress

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// Line redraws one status line on w while a terminal is attached
// and stays silent otherwise, so logs and pipes get no control characters.
// A redraw of a pattern's progress allocates nothing (its buffer and the
// pattern's name are kept), so a run left on a terminal for hours keeps a
// flat heap.
type Line struct {
	w      io.Writer
	tty    bool
	drawn  bool
	layout time.Time // when the layout Layout shows began
	buf    []byte
	named  results.Pattern // the pattern whose name is in name
	name   string
}

// NewLine is a status line on w, drawn only when tty (w is a terminal).
func NewLine(w io.Writer, tty bool) *Line { return &Line{w: w, tty: tty} }

// Printf redraws the line with a formatted text.
func (l *Line) Printf(format string, args ...any) {
	if !l.tty {
		return
	}
	fmt.Fprintf(l.w, "\r\033[K"+format, args...)
	l.drawn = true
}

// Pattern redraws the line with a pattern's live figures.
func (l *Line) Pattern(p iotest.Progress, o iotest.Options) {
	if !l.tty {
		return
	}
	if l.name == "" || p.Pattern != l.named {
		l.named, l.name = p.Pattern, p.Pattern.Name()
	}
	b := append(l.buf[:0], "\r\033[K"...)
	b = append(b, l.name...)
	b = append(b, "  "...)
	total := o.Runtime
	if p.Ramping {
		b = append(b, "ramp "...)
		total = o.Ramp
	}
	b = appendDuration(b, p.Elapsed.Round(time.Second))
	b = append(b, " / "...)
	if o.Auto != nil && !p.Ramping {
		b = append(b, "≤"...) // an auto window ends when its figure is known
	}
	b = appendDuration(b, total)
	b = append(b, "  "...)
	b = units.AppendThousands(b, p.IOPS, 0)
	b = append(b, " IOPS"...)
	l.buf = b
	_, _ = l.w.Write(b) // progress only: a lost redraw is redrawn
	l.drawn = true
}

// appendDuration appends d as time.Duration's String does ("1m5s"),
// without allocating for whole seconds.
func appendDuration(b []byte, d time.Duration) []byte {
	if d < 0 || d%time.Second != 0 {
		return append(b, d.String()...)
	}
	s := int64(d / time.Second)
	if h := s / 3600; h > 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, 'h')
		b = strconv.AppendInt(b, s/60%60, 10)
		b = append(b, 'm')
	} else if m := s / 60; m > 0 {
		b = strconv.AppendInt(b, m, 10)
		b = append(b, 'm')
	}
	b = strconv.AppendInt(b, s%60, 10)
	return append(b, 's')
}

// Done clears the line.
func (l *Line) Done() {
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// Layout redraws the line with the progress of laying out a target: done
// of total bytes, and the rate since the first call.
func (l *Line) Layout(done, total int64) {
	if l.layout.IsZero() {
		l.layout = time.Now()
	}
	el := time.Since(l.layout).Seconds()
	l.Printf("layout %s / %s  %.0f MiB/s", units.FormatSize(done), units.FormatSize(total), float64(done)/el/(1<<20))
}
