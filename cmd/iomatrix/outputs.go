package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/iomatrix/iomatrix/results"
)

// An output never overwrites an input. Every command declares which of
// its flags and arguments name files and what it does with each
// (files.go: commandFiles); the root's PersistentPreRunE (checkFiles) holds them
// to one rule once the flags are parsed, before the command runs, so
// that no command can forget it:
//   - an output is never an input of the command, its target, or
//     another of its outputs (the same file once cleaned, made absolute
//     and its links resolved, or by os.SameFile);
//   - the target is never one of the command's other files;
//   - an output can be saved (results.CheckSavable), a directory
//     written into can take files (results.CheckDirSavable);
//   - an output is never an existing file, unless --force is given;
//   - an input whose files are summed (import's, merge's, iocost's
//     results) is never given twice, by one name or two.
// A breach is bad input (exit status 2), one line naming the flag at
// fault. An output whose name is made later (sweep's default file, cap
// verify's baseline) is held to the same rule by its command, through
// g.files.

// fileUse is what a command does with a file.
type fileUse int

const (
	readUse   fileUse = iota // an input
	targetUse                // the target measured: read, and written when laid out
	writeUse                 // an output, written whole
	updateUse                // read, then written back in place
)

// role is how a message names the use of the file another one clashes
// with.
func (u fileUse) role() string {
	switch u {
	case writeUse:
		return "an output"
	case targetUse:
		return "the measured target"
	}
	return "an input"
}

// namedFile is a file as the command line named it: name is the flag
// ("--out") or the argument ("TARGET"); hint says how to keep an
// existing output instead of replacing it ("continue it with ...").
type namedFile struct {
	name, path string
	use        fileUse
	hint       string
	// once: the command sums the files this input names, so none may be
	// given twice.
	once bool
}

// fileSet is a command's files, resolved from its flags and arguments.
type fileSet struct {
	files []namedFile
	dirs  []namedFile
	force bool
	// onceWhats says what of a file given twice would count twice.
	onceWhats string
}

// withOutput is s and one output more, named by the flag name (with a
// hint of how to keep an existing file): an output whose name the command
// makes once the flags are read (a default, or a file beside another).
func (s fileSet) withOutput(name, path, hint string) fileSet {
	s.files = append(s.files[:len(s.files):len(s.files)], namedFile{name: name, path: path, use: writeUse, hint: hint})
	return s
}

// withInput is s and one input more, named by name: a file the command
// reads that no flag names (a file another input refers to).
func (s fileSet) withInput(name, path string) fileSet {
	s.files = append(s.files[:len(s.files):len(s.files)], namedFile{name: name, path: path, use: readUse})
	return s
}

// check holds s to the rule: the first breach, worded for the user.
func (s fileSet) check() error {
	if err := s.distinct(); err != nil {
		return err
	}
	for _, f := range s.files {
		if err := f.savable(); err != nil {
			return usagef("%s: %w", f.name, err)
		}
	}
	for _, d := range s.dirs {
		if err := results.CheckDirSavable(d.path); err != nil {
			return usagef("%s: %w", d.name, err)
		}
	}
	for _, f := range s.files {
		if f.use != writeUse || s.force || s.updated(f) {
			continue
		}
		if _, err := os.Stat(f.path); err == nil {
			return usagef("%s: %s exists; %sgive --force to replace it, or choose another file", f.name, f.path, f.hint)
		}
	}
	return nil
}

// distinct refuses a file written that is also another of the command's
// files, naming the flag of the one written: an output first, then a file
// written back, then the target; and then an input summed that is given
// twice.
func (s fileSet) distinct() error {
	for _, use := range []fileUse{writeUse, updateUse, targetUse} {
		for i, w := range s.files {
			if w.use != use {
				continue
			}
			for j, f := range s.files {
				if i != j && !writtenBack(w, f) && sameFile(w.path, f.path) {
					return usagef("%s: %s is also %s (%s); choose another file", w.name, w.path, f.name, f.use.role())
				}
			}
		}
	}
	for j, f := range s.files {
		for _, e := range s.files[:j] {
			if e.once && f.once && sameFile(e.path, f.path) {
				what := f.path
				if e.path != f.path {
					what += " is the same file as " + e.path + ","
				}
				return usagef("%s: %s given twice: %s would count twice", f.name, what, s.onceWhats)
			}
		}
	}
	return nil
}

// writtenBack tells whether a and b are an output and a file written
// back in place: the same file, if they are one, written once.
func writtenBack(a, b namedFile) bool {
	return a.use == writeUse && b.use == updateUse || a.use == updateUse && b.use == writeUse
}

// updated tells whether the output f is a file the command writes back
// in place (sweep -o naming the file of --resume).
func (s fileSet) updated(f namedFile) bool {
	for _, u := range s.files {
		if u.use == updateUse && sameFile(u.path, f.path) {
			return true
		}
	}
	return false
}

// savable refuses a file written that could not be saved. A file written
// back need not exist yet (iocost's --state is made, with its directory,
// on the first apply).
func (f namedFile) savable() error {
	switch f.use {
	case writeUse:
		return results.CheckSavable(f.path)
	case updateUse:
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			return results.CheckDirSavable(filepath.Dir(f.path))
		}
		return results.CheckSavable(f.path)
	}
	return nil
}

// sameFile tells whether the paths a and b name one file: the same path
// once made absolute and clean with their links resolved (as far as the
// path exists), or the same file by os.SameFile (a hard link).
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if resolved(a) == resolved(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// resolved is path made absolute and clean, its links resolved; a file
// that does not exist yet is resolved through its directory.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
