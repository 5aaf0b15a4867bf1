package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// An output never overwrites an input. Every command declares here which
// of its flags and arguments name files and what it does with each
// (commandFiles); the root's PersistentPreRunE (checkFiles) holds them
// to one rule once the flags are parsed, before the command runs, so
// that no command can forget it:
//   - an output is never an input of the command, its target, or
//     another of its outputs (the same file once cleaned, made absolute
//     and its links resolved, or by os.SameFile);
//   - the target is never one of the command's other files;
//   - an output can be saved (results.CheckSavable), a directory
//     written into can take files (results.CheckDirSavable);
//   - an output is never an existing file, unless --force is given.
// A breach is bad input (exit status 2), one line naming the flag at
// fault. An output whose name is made later (sweep's default file, cap
// verify's baseline) is held to the same rule by its command, through
// g.files.

// fileRoles says which of a command's flags and arguments name files, and
// what the command does with each.
type fileRoles struct {
	// args names the positional arguments in messages when they are files
	// the command reads ("FILE.json"); "" when they are none.
	args string
	// target: the optional argument is the TARGET measured, which is
	// written when laid out (iomatrix.dat when none is given);
	// targetFlag is the flag that names the target instead.
	target     bool
	targetFlag string
	inputs     []string // flags naming files read
	outputs    []string // flags naming files written whole
	// updated are flags naming a file read and written back in place
	// (sweep's --resume, iocost's --state): that is their meaning, so
	// the file may exist, and an output naming it is that same file.
	updated []string
	dirs    []string // flags naming a directory files are written into
	// resume is the flag that continues an existing output instead of
	// replacing it, offered when one exists.
	resume string
}

// commandFiles are the files of every command, by its path below
// iomatrix. TestCommandFilesDeclared holds the tree to it: every command
// is here, and every flag named here is the command's.
var commandFiles = map[string]fileRoles{
	"run":          {target: true, outputs: []string{"out"}},
	"sweep":        {target: true, inputs: []string{"profile"}, outputs: []string{"out"}, updated: []string{"resume"}, resume: "resume"},
	"cap verify":   {target: true, inputs: []string{"profile", "baseline"}, outputs: []string{"out"}},
	"cap show":     {},
	"cap cleanup":  {},
	"throttle":     {},
	"isolate":      {target: true},
	"crosscheck":   {target: true, dirs: []string{"keep"}},
	"profiles":     {},
	"report":       {args: "FILE.json", outputs: []string{"out"}},
	"compare":      {args: "a compared file"},
	"import":       {args: "FIO.json", outputs: []string{"out"}},
	"merge":        {args: "RESULTS.json", outputs: []string{"out"}},
	"observe":      {inputs: []string{"from", "mysql"}, outputs: []string{"workload", "out"}},
	"fit":          {args: "RESULTS.json", targetFlag: "rehearse", inputs: []string{"workload"}, outputs: []string{"out"}},
	"iocost model": {args: "RESULTS.json", outputs: []string{"out"}},
	"iocost apply": {inputs: []string{"from"}, updated: []string{"state"}},
	"iocost show":  {inputs: []string{"state"}},
	"iocost reset": {updated: []string{"state"}},
	"k8s run":      {inputs: []string{"profile", "kubeconfig"}, dirs: []string{"out-dir"}},
	"k8s collect":  {inputs: []string{"kubeconfig"}, dirs: []string{"out-dir"}},
	"k8s manifest": {inputs: []string{"profile"}},
}

// commandName is cmd's path below iomatrix: the key of commandFiles.
func commandName(cmd *cobra.Command) string {
	name, _ := strings.CutPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	return name
}

// checkFiles is the root's PersistentPreRunE: the command's files, as
// its flags and arguments name them, held to the rule, and kept in
// g.files for the outputs the command names later.
func checkFiles(g *globalOptions) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		roles, ok := commandFiles[commandName(cmd)]
		if !ok {
			return nil
		}
		g.files = roles.files(cmd.Flags(), args)
		return g.files.check()
	}
}

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
}

// fileSet is a command's files, resolved from its flags and arguments.
type fileSet struct {
	files []namedFile
	dirs  []namedFile
	force bool
}

// files are the files f and args name, as r declares them.
func (r fileRoles) files(f *pflag.FlagSet, args []string) fileSet {
	var s fileSet
	add := func(use fileUse, flags []string) {
		for _, name := range flags {
			for _, p := range flagPaths(f, name) {
				s.files = append(s.files, namedFile{name: "--" + name, path: p, use: use})
			}
		}
	}
	if r.target && len(args) <= 1 {
		s.files = append(s.files, namedFile{name: "TARGET", path: targetArg(args), use: targetUse})
	}
	add(targetUse, []string{r.targetFlag})
	if r.args != "" {
		for _, a := range args {
			s.files = append(s.files, namedFile{name: r.args, path: a, use: readUse})
		}
	}
	add(readUse, r.inputs)
	add(updateUse, r.updated)
	first := len(s.files)
	add(writeUse, r.outputs)
	for i := first; i < len(s.files) && r.resume != ""; i++ {
		s.files[i].hint = fmt.Sprintf("continue it with --%s %s, ", r.resume, s.files[i].path)
	}
	for _, name := range r.dirs {
		for _, p := range flagPaths(f, name) {
			s.dirs = append(s.dirs, namedFile{name: "--" + name, path: p, use: writeUse})
		}
	}
	if fl := f.Lookup("force"); fl != nil {
		s.force = fl.Value.String() == "true"
	}
	return s
}

// flagPaths are the files the flag name's values name ("" names none).
func flagPaths(f *pflag.FlagSet, name string) []string {
	fl := f.Lookup(name)
	if fl == nil {
		return nil
	}
	values := []string{fl.Value.String()}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		values = sv.GetSlice()
	}
	var paths []string
	for _, v := range values {
		if p := filePath(name, v); p != "" {
			paths = append(paths, p)
		}
	}
	return paths
}

// filePath is the file a flag's value names, "" when it names none: a
// built-in profile's name, a MySQL source other than file:PATH.
func filePath(flag, value string) string {
	switch flag {
	case "profile":
		if !profiles.IsPath(value) {
			return ""
		}
	case "mysql":
		return observe.MySQLFile(value)
	}
	return value
}

// withOutput is s and one output more, named by the flag name (with a
// hint of how to keep an existing file): an output whose name the command
// makes once the flags are read (a default, or a file beside another).
func (s fileSet) withOutput(name, path, hint string) fileSet {
	s.files = append(s.files[:len(s.files):len(s.files)], namedFile{name: name, path: path, use: writeUse, hint: hint})
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
// written back, then the target.
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

// forceFlag gives a command that writes files --force, which lets an
// output replace an existing file (what names it): the flag is defined
// here, or the meaning added to the --force the command has.
func forceFlag(f *pflag.FlagSet, what string) {
	if fl := f.Lookup("force"); fl != nil {
		fl.Usage += "; also replace an existing " + what
		return
	}
	f.Bool("force", false, "replace an existing "+what)
}
