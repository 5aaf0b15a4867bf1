package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// The refusal contract (docs/exit-status.md): bad input exits 2 with one
// line on stderr naming the flag or the file at fault, prints nothing on
// stdout, and leaves everything as it was: the working directory, the
// cgroup trees, the loop devices, and the target, on which no I/O is
// done. TestRefusal holds every command to it, one case per way of
// breaking it (refusalCases); the other *BadInput tests pin the wording
// of particular refusals.
//
// Each case runs iomatrix as a process of its own in a fresh working
// directory holding the case's input files, its HOME and TMPDIR inside
// that directory and no cluster configured. The cases that measure
// (need == needDevice) get a RAM disk as their target ($DEV), whose
// counters must not move. A case that is wrongly accepted would measure:
// its argv keeps every runtime and size tiny, and a case is killed after
// refusalTimeout.
func TestRefusal(t *testing.T) {
	lib := refusalFixtures(t)
	cases := refusalCases()
	checkRefusalTable(t, cases)
	byNeed := map[need][]refusal{}
	for _, c := range cases {
		byNeed[c.need] = append(byNeed[c.need], c)
	}
	t.Run("files", func(t *testing.T) {
		e := &refusalEnv{lib: lib}
		e.runAll(t, byNeed[needNothing])
	})
	t.Run("host", func(t *testing.T) {
		testenv.Integration(t)
		testenv.LockCgroupV2(t)
		e := &refusalEnv{lib: lib, cgroups: true}
		e.runAll(t, byNeed[needHost])
	})
	t.Run("device", func(t *testing.T) {
		dev := testenv.RAMDisk(t, 64<<20)
		testenv.LockCgroupV2(t)
		e := &refusalEnv{lib: lib, cgroups: true, dev: dev, devNum: devNumOf(t, dev).String()}
		e.settle(t)
		e.runAll(t, byNeed[needDevice])
	})
}

// refusalTimeout ends a case that does not end by itself: a refusal takes
// milliseconds, a wrongly accepted case measures for a second or so.
const refusalTimeout = 20 * time.Second

// need is what a case needs of the machine.
type need int

const (
	needNothing need = iota // files in, files out: runs under -short, as any user
	needHost                // reads or changes the host if accepted (sysfs, cgroups, a database): an integration test
	needDevice              // measures: root, and the test's RAM disk as the target
)

// The kinds of breach issue 38 found; each has a case or more.
const (
	kindOverInput   = "an output replaces an input"
	kindOverFile    = "an output replaces an existing file"
	kindAfterIO     = "a refusal that comes after the I/O"
	kindAccepted    = "a value accepted that changes the answer"
	kindNumber      = "NaN, Inf or a negative number"
	kindTwice       = "a value given twice"
	kindInjected    = "a field that injects another"
	kindMultiDoc    = "a second YAML document"
	kindWrongStatus = "the wrong status, or the wrong flag named"
	kindUnknownSub  = "an unknown subcommand"
)

var refusalKinds = []string{kindOverInput, kindOverFile, kindAfterIO, kindAccepted, kindNumber, kindTwice,
	kindInjected, kindMultiDoc, kindWrongStatus, kindUnknownSub}

// refusal is one case of the contract.
type refusal struct {
	kind string
	need need
	// args of iomatrix; $DEV is the RAM disk's path, $DEVNAME its name
	// (loop7), $DEVNUM its MAJ:MIN.
	args []string
	// files are copied from the fixtures (refusalFixtures) into the
	// working directory first: NAME, or PATH=NAME to give it another
	// name or put it in a directory.
	files []string
	// names: the one line on stderr names one of these, a flag (its short
	// form counts) or a file.
	names []string
}

func (c refusal) name() string {
	return strings.ReplaceAll(strings.Join(c.args, " "), "/", "∕")
}

// checkRefusalTable fails the test when a kind, or a command or group of
// the command tree, has no case.
func checkRefusalTable(t *testing.T, cases []refusal) {
	t.Helper()
	kinds := map[string]bool{}
	for _, c := range cases {
		kinds[c.kind] = true
		if len(c.names) == 0 {
			t.Errorf("case %q names nothing to look for", c.args)
		}
	}
	for _, k := range refusalKinds {
		if !kinds[k] {
			t.Errorf("no case of the kind %q", k)
		}
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" { // the re-executed children; help's own refusals are TestUsageMessages'
			return
		}
		path := strings.TrimPrefix(cmd.CommandPath(), "iomatrix")
		covered := false
		for _, c := range cases {
			covered = covered || strings.HasPrefix(" "+strings.Join(c.args, " ")+" ", path+" ")
		}
		if !covered {
			t.Errorf("no case of iomatrix%s", path)
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand(&globalOptions{}))
}

// refusalEnv is what the cases of one need share.
type refusalEnv struct {
	lib     map[string][]byte // the fixtures, by name
	cgroups bool              // compare the cgroup trees and loop devices
	dev     string            // the target of the cases that measure
	devNum  string            // its MAJ:MIN
}

// runAll runs the cases, those that touch nothing of the machine's in
// parallel.
func (e *refusalEnv) runAll(t *testing.T, cases []refusal) {
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			if !e.cgroups && e.dev == "" {
				t.Parallel()
			}
			e.check(t, c)
		})
	}
}

// check runs one case and holds it to each clause of the contract, one
// error per broken clause.
func (e *refusalEnv) check(t *testing.T, c refusal) {
	dir := t.TempDir()
	testenv.Must(t, os.Mkdir(filepath.Join(dir, "tmp"), 0o755))
	for _, f := range c.files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			src = dest
		}
		data, ok := e.lib[src]
		if !ok {
			t.Fatalf("no fixture %q", src)
		}
		testenv.Must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, dest)), 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(dir, dest), data, 0o644))
	}
	args := e.expand(c.args)
	before := e.snapshot(t, dir)
	r, pid, err := runRefused(dir, args)
	after := e.snapshot(t, dir)

	var broken []string
	switch {
	case err != nil:
		broken = append(broken, fmt.Sprintf("did not end by itself: %v", err))
	case r.code != exitUsage:
		broken = append(broken, fmt.Sprintf("exit %d, want 2", r.code))
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	names := e.expand(c.names)
	switch n := strings.Count(line, "\n") + 1; {
	case line == "":
		broken = append(broken, fmt.Sprintf("nothing on stderr, want one line naming one of %q", names))
	case n != 1 || !strings.HasSuffix(r.stderr, "\n"):
		broken = append(broken, fmt.Sprintf("stderr is %d lines, want one", n))
	case !namesOne(line, names):
		broken = append(broken, fmt.Sprintf("the line names none of %q", names))
	}
	if r.stdout != "" {
		broken = append(broken, fmt.Sprintf("stdout not empty: %d bytes, %s", len(r.stdout), firstLines(r.stdout, 2)))
	}
	if d := diffFiles(before.files, after.files); d != "" {
		broken = append(broken, "the working directory changed: "+d)
	}
	if e.cgroups {
		if d := diffCgroups(t, before.cgroups, after.cgroups, pid); d != "" {
			broken = append(broken, "the cgroup tree changed: "+d)
		}
		if d := diffLoops(t, before.loops, after.loops, dir, e.dev); d != "" {
			broken = append(broken, "the loop devices changed: "+d)
		}
	}
	if e.dev != "" {
		if d := diffCounters(before.counters, after.counters); d != "" {
			broken = append(broken, fmt.Sprintf("I/O on the target %s: %s", e.dev, d))
		}
	}
	if len(broken) > 0 {
		t.Logf("iomatrix %s (%s)\nstderr: %s", quoteArgs(args), c.kind, firstLines(r.stderr, 8))
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// expand puts the test's device into args.
func (e *refusalEnv) expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if e.dev != "" {
			a = strings.NewReplacer("$DEVNAME", filepath.Base(e.dev), "$DEVNUM", e.devNum, "$DEV", e.dev).Replace(a)
		}
		out[i] = a
	}
	return out
}
