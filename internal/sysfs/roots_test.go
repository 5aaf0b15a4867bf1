package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A root that does not exist, or lacks what every such mount holds, is
// refused naming what it lacks; a fixture tree with it passes.
func TestCheckRoots(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.MkdirAll(filepath.Join(good, "class", "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(good, "diskstats"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name string
		err  error
		says string
	}{
		{"sysfs", NewFS(good, good).CheckSys(), ""},
		{"procfs", NewFS(good, good).CheckProc(), ""},
		{"sysfs missing", NewFS(missing, good).CheckSys(), missing + " does not exist"},
		{"procfs missing", NewFS(good, missing).CheckProc(), missing + " does not exist"},
		{"sysfs without block devices", NewFS(dir, good).CheckSys(), dir + " is not a sysfs mount: it has no class/block"},
		{"procfs without diskstats", NewFS(good, dir).CheckProc(), dir + " is not a procfs mount: it has no diskstats"},
	} {
		var re *RootError
		switch {
		case c.says == "" && c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.says != "" && (!errors.As(c.err, &re) || c.err.Error() != c.says || !errors.Is(c.err, fs.ErrNotExist)):
			t.Errorf("%s: %v, want a RootError saying %q", c.name, c.err, c.says)
		}
	}
}
