package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
)

// liveLine redraws one status line on stderr while a terminal is attached
// and stays silent otherwise, so logs and pipes get no control characters.
type liveLine struct {
	g     *globalOptions
	drawn bool
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
	if p.Ramping {
		l.printf("%s  ramp %s / %s  %s IOPS", p.Pattern.Name(), p.Elapsed.Round(time.Second), o.Ramp, thousands(p.IOPS, 0))
		return
	}
	l.printf("%s  %s / %s  %s IOPS", p.Pattern.Name(), p.Elapsed.Round(time.Second), o.Runtime, thousands(p.IOPS, 0))
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
