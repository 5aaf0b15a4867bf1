package main

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/progress"
)

// newLiveLine is a status line on standard error, drawn on a terminal.
func newLiveLine(g *globalOptions) *progress.Line { return progress.NewLine(g.stderr, g.stderrTTY) }

// newSweepProgress shows a loop over total patterns on standard error.
func newSweepProgress(g *globalOptions, total, done int, o iotest.Options) *progress.Sweep {
	return progress.NewSweep(g.stderr, g.stderrTTY, total, done, o)
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
