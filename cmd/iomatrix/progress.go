package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
)

// liveLine redraws one status line on stderr while a terminal is attached
// and stays silent otherwise, so logs and pipes get no control characters.
// A redraw of a pattern's progress allocates nothing (its buffer and the
// pattern's name are kept), so a run left on a terminal for hours keeps a
// flat heap.
type liveLine struct {
	g     *globalOptions
	drawn bool
	buf   []byte
	named iotest.Pattern // the pattern whose name is in name
	name  string
}

func newLiveLine(g *globalOptions) *liveLine { return &liveLine{g: g} }

func (l *liveLine) printf(format string, args ...any) {
	if !l.g.stderrTTY {
		return
	}
	fmt.Fprintf(l.g.stderr, "\r\033[K"+format, args...)
	l.drawn = true
}

func (l *liveLine) pattern(p iotest.Progress, o iotest.Options) {
	if !l.g.stderrTTY {
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
	b = appendDuration(b, total)
	b = append(b, "  "...)
	b = appendThousands(b, p.IOPS, 0)
	b = append(b, " IOPS"...)
	l.buf = b
	l.g.stderr.Write(b)
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

func (l *liveLine) done() {
	if l.drawn {
		fmt.Fprint(l.g.stderr, "\r\033[K")
		l.drawn = false
	}
}

// checkOutPath refuses an output file whose directory is missing before any
// I/O is done.
func checkOutPath(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return usagef("--out: directory %s does not exist", dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usagef("--out: %s is a directory", path)
	}
	return nil
}
