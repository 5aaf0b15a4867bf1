package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
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
	named results.Pattern // the pattern whose name is in name
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
	if o.Auto != nil && !p.Ramping {
		b = append(b, "≤"...) // an auto window ends when its figure is known
	}
	b = appendDuration(b, total)
	b = append(b, "  "...)
	b = units.AppendThousands(b, p.IOPS, 0)
	b = append(b, " IOPS"...)
	l.buf = b
	_, _ = l.g.stderr.Write(b) // progress only: a lost redraw is redrawn
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

// checkOutPath refuses, before any I/O, an output file that could not be
// saved, instead of finding out after the first pattern or the whole run;
// flag is the one that named it. The save writes a temporary file beside
// path and renames it over path, so the directory must take new files:
// unix.Access reports a read-only mount (EROFS) as well as missing
// permission. An existing file must be writable too: the rename would
// replace it even so, but a file made read-only is not one to overwrite,
// as a shell redirect would not.
func checkOutPath(flag, path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return usagef("%s: directory %s does not exist", flag, dir)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return usagef("%s: %s is a directory", flag, path)
		}
		if err := unix.Access(path, unix.W_OK); err != nil {
			return usagef("%s: %s cannot be replaced: %w", flag, path, err)
		}
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return usagef("%s: cannot create files in directory %s: %w", flag, dir, err)
	}
	return nil
}
