package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/profiles"
)

// Which of each command's flags and arguments name files, and what it
// does with each: the declarations that the output rule (outputs.go)
// holds every command to.

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
	// inputArg names a command's first argument when it is a file the
	// command reads and the second its TARGET (replay's TRACE TARGET).
	inputArg string
	inputs   []string // flags naming files read
	outputs  []string // flags naming files written whole
	// updated are flags naming a file read and written back in place
	// (sweep's --resume, iocost's --state): that is their meaning, so
	// the file may exist, and an output naming it is that same file.
	updated []string
	dirs    []string // flags naming a directory files are written into
	// resume is the flag that continues an existing output instead of
	// replacing it, offered when one exists.
	resume string
	// once are the inputs ("" for the arguments) whose files are all read
	// and summed, so that one given twice, by one name or two, would
	// count twice: what counts is said in messages.
	once      []string
	onceWhats string
}

// commandFiles are the files of every command, by its path below
// iomatrix. TestCommandFilesDeclared holds the tree to it: every command
// is here, and every flag named here is the command's.
var commandFiles = map[string]fileRoles{
	"run":          {target: true, outputs: []string{"out", "lat-log", "response-log"}},
	"replay":       {inputArg: "TRACE", outputs: []string{"out"}},
	"burst":        {target: true, outputs: []string{"out", "chart"}},
	"sweep":        {target: true, inputs: []string{"profile", "burst"}, outputs: []string{"out"}, updated: []string{"resume"}, resume: "resume"},
	"cap verify":   {target: true, inputs: []string{"profile", "baseline"}, outputs: []string{"out"}},
	"cap show":     {},
	"cap cleanup":  {},
	"throttle":     {},
	"isolate":      {target: true},
	"crosscheck":   {target: true, dirs: []string{"keep"}},
	"profiles":     {},
	"report":       {args: "FILE.json", outputs: []string{"out"}},
	"compare":      {args: "BASE.json or NEW.json"},
	"import":       {args: "FIO.json", outputs: []string{"out"}, once: []string{""}, onceWhats: "its jobs"},
	"merge":        {args: "RESULTS.json", outputs: []string{"out"}, once: []string{""}, onceWhats: "its results"},
	"observe":      {inputs: []string{"from", "mysql", "postgres"}, outputs: []string{"workload", "out"}},
	"fit":          {args: "RESULTS.json", targetFlag: "rehearse", inputs: []string{"workload"}, outputs: []string{"out"}},
	"iocost model": {args: "RESULTS.json", outputs: []string{"out"}, once: []string{""}, onceWhats: "its cells"},
	"iocost apply": {inputs: []string{"from"}, updated: []string{"state"}, once: []string{"from"}, onceWhats: "its cells"},
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

// files are the files f and args name, as r declares them.
func (r fileRoles) files(f *pflag.FlagSet, args []string) fileSet {
	var s fileSet
	add := func(use fileUse, flags []string) {
		for _, name := range flags {
			for _, p := range flagPaths(f, name) {
				s.files = append(s.files, namedFile{name: "--" + name, path: p, use: use, once: use == readUse && slices.Contains(r.once, name)})
			}
		}
	}
	if r.target && len(args) <= 1 {
		s.files = append(s.files, namedFile{name: "TARGET", path: targetArg(args), use: targetUse})
	}
	add(targetUse, []string{r.targetFlag})
	if r.inputArg != "" && len(args) == 2 {
		s.files = append(s.files, namedFile{name: r.inputArg, path: args[0], use: readUse}, namedFile{name: "TARGET", path: args[1], use: targetUse})
	}
	if r.args != "" {
		for _, a := range args {
			s.files = append(s.files, namedFile{name: r.args, path: a, use: readUse, once: slices.Contains(r.once, "")})
		}
	}
	add(readUse, r.inputs)
	s.onceWhats = r.onceWhats
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
// built-in profile's name, a database source other than file:PATH.
func filePath(flag, value string) string {
	switch flag {
	case "profile":
		if !profiles.IsPath(value) {
			return ""
		}
	case "mysql", "postgres":
		return observe.DatabaseFile(value)
	}
	return value
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
