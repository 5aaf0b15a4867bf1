package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RootError is a root given for sysfs or procfs that is not one: it
// does not exist, or it lacks what every such mount holds.
type RootError struct {
	FS   string // "sysfs" or "procfs"
	Path string // the root
	Want string // what it lacks, below the root; "" when the root itself is missing
	Err  error
}

func (e *RootError) Error() string {
	switch {
	case e.Want == "" && errors.Is(e.Err, fs.ErrNotExist):
		return e.Path + " does not exist"
	case e.Want == "":
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s is not a %s mount: it has no %s", e.Path, e.FS, e.Want)
}

func (e *RootError) Unwrap() error { return e.Err }

// CheckSys refuses a sysfs root that does not exist or has no
// class/block, the directory every block device is listed in: read
// through it, every device would look absent, and every question about
// one would be answered as if there were none.
func (fs FS) CheckSys() error { return checkRoot("sysfs", fs.sys, filepath.Join("class", "block")) }

// CheckProc refuses a procfs root that does not exist or has no
// diskstats.
func (fs FS) CheckProc() error { return checkRoot("procfs", fs.proc, "diskstats") }

func checkRoot(kind, root, want string) error {
	if _, err := os.Stat(root); err != nil {
		return &RootError{FS: kind, Path: root, Err: err}
	}
	if _, err := os.Stat(filepath.Join(root, want)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return &RootError{FS: kind, Path: root, Err: err}
		}
		return &RootError{FS: kind, Path: root, Want: want, Err: err}
	}
	return nil
}
