package main

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// The output rule over declared files: the first breach is refused,
// naming the flag at fault; what keeps it is accepted.
func TestFileSetCheck(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, name := range []string{"in.json", "old.json"} {
		testenv.Must(t, os.WriteFile(name, []byte("{}"), 0o644))
	}
	testenv.Must(t, os.Symlink("in.json", "link.json"))
	testenv.Must(t, os.Link("in.json", "hard.json"))
	testenv.Must(t, os.Symlink(".", "here"))
	in := func(name, path string) namedFile { return namedFile{name: name, path: path, use: readUse} }
	out := func(name, path string) namedFile { return namedFile{name: name, path: path, use: writeUse} }
	back := func(name, path string) namedFile { return namedFile{name: name, path: path, use: updateUse} }
	target := func(path string) namedFile { return namedFile{name: "TARGET", path: path, use: targetUse} }
	once := func(name, path string) namedFile { return namedFile{name: name, path: path, use: readUse, once: true} }
	files := func(f ...namedFile) fileSet { return fileSet{files: f} }
	cases := []struct {
		name string
		set  fileSet
		want string // "": accepted
	}{
		{"output is an input", files(in("--from", "in.json"), out("--workload", "in.json")), "--workload: in.json is also --from (an input); choose another file"},
		{"relative and absolute", files(in("--from", filepath.Join(dir, "in.json")), out("--workload", "in.json")), "--workload: in.json is also --from"},
		{"cleaned", files(in("FILE.json", "in.json"), out("--out", "nowhere/../in.json")), "--out: nowhere/../in.json is also FILE.json"},
		{"through a symbolic link", files(in("FILE.json", "link.json"), out("--out", "in.json")), "--out: in.json is also FILE.json"},
		{"a hard link", files(in("FILE.json", "hard.json"), out("--out", "in.json")), "--out: in.json is also FILE.json"},
		{"through a linked directory", files(in("FILE.json", "in.json"), out("--out", "here/in.json")), "--out: here/in.json is also FILE.json"},
		{"a new file through a linked directory", files(out("--out", "new.json"), out("--workload", "here/new.json")), "--out: new.json is also --workload (an output)"},
		{"two outputs", files(out("--workload", "x.json"), out("--out", "x.json")), "--workload: x.json is also --out (an output)"},
		{"output is the target", files(target("t.dat"), out("--out", "t.dat")), "--out: t.dat is also TARGET (the measured target)"},
		{"target is an input", files(target("in.json"), in("--profile", "in.json")), "TARGET: in.json is also --profile (an input)"},
		{"written back is an input", files(in("--from", "in.json"), back("--state", "in.json")), "--state: in.json is also --from (an input)"},
		{"written back is the target", files(target("old.json"), back("--resume", "old.json")), "--resume: old.json is also TARGET"},
		{"output names the file written back", files(back("--resume", "old.json"), out("--out", "./old.json")), ""},
		{"inputs may repeat", files(in("RESULTS.json", "in.json"), in("RESULTS.json", "hard.json")), ""},
		{"an input summed, twice by one name", fileSet{files: []namedFile{once("RESULTS.json", "in.json"), once("RESULTS.json", "in.json")}, onceWhats: "its cells"},
			"RESULTS.json: in.json given twice: its cells would count twice"},
		{"an input summed, twice by two names", fileSet{files: []namedFile{once("--from", "in.json"), once("--from", "hard.json")}, onceWhats: "its cells"},
			"--from: hard.json is the same file as in.json, given twice: its cells would count twice"},
		{"inputs summed, distinct", files(once("RESULTS.json", "in.json"), once("RESULTS.json", "old.json")), ""},
		{"existing output", files(out("--out", "old.json")), "--out: old.json exists; give --force to replace it, or choose another file"},
		{"existing output, forced", fileSet{files: []namedFile{out("--out", "old.json")}, force: true}, ""},
		{"existing output, forced, still an input", fileSet{files: []namedFile{in("FILE.json", "old.json"), out("--out", "old.json")}, force: true}, "--out: old.json is also FILE.json"},
		{"how to keep it", files(namedFile{name: "--out", path: "old.json", use: writeUse, hint: "continue it with --resume old.json, "}),
			"--out: old.json exists; continue it with --resume old.json, give --force to replace it"},
		{"new output", files(in("FILE.json", "in.json"), out("--out", "new.json")), ""},
		{"missing directory", files(out("--out", "no/x.json")), "--out: directory no does not exist"},
		{"on sysfs", files(out("--out", "/sys/x.json")), "--out: cannot create files in directory /sys"},
		{"written back, made with its directory", files(back("--state", "no/state.json")), ""},
		{"a directory written into", fileSet{dirs: []namedFile{{name: "--out-dir", path: "/proc/x"}}}, "--out-dir: cannot create files in directory /proc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.set.check()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want %q", err, c.want)
			case err != nil && exitCode(err) != exitUsage:
				t.Errorf("%v: exit status %d, want 2", err, exitCode(err))
			}
		})
	}
}

// declared are the flags r names.
func (r fileRoles) declared() []string {
	names := slices.Concat(r.inputs, r.outputs, r.updated, r.dirs)
	if r.targetFlag != "" {
		names = append(names, r.targetFlag)
	}
	return names
}

// Every command declares its files, and only flags it has: a command
// added without a declaration, or a flag naming a file left out of it,
// fails here. A command that writes files has --force.
func TestCommandFilesDeclared(t *testing.T) {
	root := newRootCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard})
	root.InitDefaultCompletionCmd()
	fileFlags := []string{"out", "out-dir", "keep", "workload", "from", "baseline", "resume", "state", "profile", "rehearse", "kubeconfig", "mysql", "postgres", "lat-log", "response-log"}
	seen := map[string]bool{}
	var visit func(*cobra.Command)
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			visit(sub)
		}
		name := commandName(c)
		if c == root || c.Hidden || !c.Runnable() || c.HasSubCommands() || name == "help" || strings.HasPrefix(name, "completion") {
			return
		}
		roles, ok := commandFiles[name]
		if !ok {
			t.Errorf("%s: not in commandFiles: declare which of its flags and arguments name files", name)
			return
		}
		seen[name] = true
		declared := roles.declared()
		for _, f := range declared {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s: declares --%s, which it has not", name, f)
			}
		}
		for _, f := range fileFlags {
			if c.Flags().Lookup(f) != nil && !slices.Contains(declared, f) {
				t.Errorf("%s: --%s names a file but is not declared in commandFiles", name, f)
			}
		}
		if force := c.Flags().Lookup("force"); len(roles.outputs) > 0 && (force == nil || !strings.Contains(force.Usage, "replace an existing")) {
			t.Errorf("%s writes files: it needs --force, saying that it replaces an existing output", name)
		}
	}
	visit(root)
	for name := range commandFiles {
		if !seen[name] {
			t.Errorf("commandFiles declares %q, which is no command", name)
		}
	}
}

// snapshot is what dir holds: each file's content, each link's target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		switch {
		case err != nil:
			return err
		case info.Mode()&os.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			m[rel] = "-> " + to
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			m[rel] = string(b)
			return err
		default:
			m[rel] = info.Mode().String()
		}
		return nil
	})
	testenv.Must(t, err)
	return m
}

// outputFixtures fills dir with the files the commands below read, and
// returns the name of the fixture of each kind.
func outputFixtures(t *testing.T, dir string) {
	t.Helper()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		testenv.Must(t, err)
		testenv.Must(t, os.WriteFile(filepath.Join(dir, to), b, 0o644))
	}
	copyFile(fixture, "R.json")
	copyFile(fixture, "R2.json")
	copyFile("testdata/fit/systems.yaml", "W.yaml")
	copyFile("../../iotest/fio/testdata/randread.json", "F.json")
	for name, data := range map[string]string{
		"O.json": tinyObservation, "X": "keep me\n", "P.yaml": "name: p\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 1}\n",
		"M.dsn": "monitor@tcp(db1:3306)/\n", "K/crosscheck.json": "{}\n",
	} {
		testenv.Must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	testenv.Must(t, os.Symlink("R.json", filepath.Join(dir, "L.json")))
	testenv.Must(t, os.Link(filepath.Join(dir, "R.json"), filepath.Join(dir, "H.json")))
	testenv.Must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
}

// No command's output replaces one of its inputs, its target or, without
// --force, an existing file, and none is written where it could not be
// saved: each breach is refused with exit status 2 and one line naming
// the flag at fault, before anything is done: the directory holds what it
// held, no target is laid out.
func TestOutputNeverReplacesInput(t *testing.T) {
	dir := t.TempDir()
	outputFixtures(t, dir)
	t.Chdir(dir)
	// Should a case not be refused, it measures little.
	small := []string{"--size", "16MiB", "--runtime", "1s", "--ramp", "0s"}
	fit := func(args ...string) []string {
		return slices.Concat([]string{"fit", "R.json", "--workload", "W.yaml", "--rehearse", "t.dat"}, small, args)
	}
	measure := func(args ...string) []string { return slices.Concat(args, small) }
	cases := []struct {
		args    []string
		mention string
	}{
		{[]string{"observe", "--from", "O.json", "--workload", "O.json"}, "--workload: O.json is also --from (an input); choose another file"},
		{[]string{"observe", "-o", "Y.json", "--workload", "Y.json", "--duration", "1s"}, "--workload: Y.json is also --out (an output)"},
		{[]string{"observe", "--from", "O.json", "--workload", "X"}, "--workload: X exists; give --force to replace it, or choose another file"},
		{[]string{"observe", "--mysql", "db=file:M.dsn", "-o", "M.dsn", "--force", "--duration", "1s"}, "--out: M.dsn is also --mysql (an input)"},
		{[]string{"observe", "--postgres", "db=file:M.dsn", "-o", "M.dsn", "--force", "--duration", "1s"}, "--out: M.dsn is also --postgres (an input)"},
		{[]string{"observe", "--postgres", "file:M.dsn", "--workload", "M.dsn", "--force", "--duration", "1s"}, "--workload: M.dsn is also --postgres (an input)"},
		{[]string{"observe", "--from", "O.json", "--workload", "fifo", "--force"}, "--workload: fifo is not a regular file"},
		{fit("-o", "R.json"), "--out: R.json is also RESULTS.json (an input)"},
		{fit("-o", "W.yaml"), "--out: W.yaml is also --workload (an input)"},
		{fit("-o", "t.dat"), "--out: t.dat is also --rehearse (the measured target)"},
		{fit("-o", "X"), "--out: X exists"},
		{fit("--rehearse", "W.yaml", "--force"), "--rehearse: W.yaml is also --workload (an input)"},
		{[]string{"report", "R.json", "-o", "R.json"}, "--out: R.json is also FILE.json (an input)"},
		{[]string{"report", "R.json", "-o", filepath.Join(dir, "R.json")}, "is also FILE.json"},
		{[]string{"report", "L.json", "-o", "R.json", "--force"}, "--out: R.json is also FILE.json"},
		{[]string{"report", "H.json", "-o", "R.json", "--force"}, "--out: R.json is also FILE.json"},
		{[]string{"report", "R.json", "-o", "X"}, "--out: X exists"},
		{[]string{"import", "F.json", "-o", "F.json"}, "--out: F.json is also FIO.json (an input)"},
		{[]string{"merge", "R.json", "R2.json", "-o", "R2.json"}, "--out: R2.json is also RESULTS.json (an input)"},
		{[]string{"iocost", "model", "R.json", "-o", "R.json"}, "--out: R.json is also RESULTS.json (an input)"},
		{[]string{"iocost", "apply", "vda", "--from", "R.json", "--state", "R.json"}, "--state: R.json is also --from (an input)"},
		{measure("run", "t.dat", "-o", "t.dat"), "--out: t.dat is also TARGET (the measured target)"},
		{measure("run", "-o", defaultTarget), "--out: iomatrix.dat is also TARGET"},
		{measure("run", "t.dat", "-o", "/sys/iomatrix.json"), "--out: cannot create files in directory /sys"},
		{measure("run", "t.dat", "-o", "/nonexistent/dir/x.json"), "--out: directory /nonexistent/dir does not exist"},
		{measure("sweep", "t.dat", "-p", "P.yaml", "-o", "P.yaml"), "--out: P.yaml is also --profile (an input)"},
		{measure("sweep", "P.yaml", "-p", "P.yaml", "--force"), "TARGET: P.yaml is also --profile (an input)"},
		{measure("sweep", "R.json", "--resume", "R.json"), "--resume: R.json is also TARGET"},
		{measure("sweep", "t.dat", "-p", "cdm", "-o", "X"), "--out: X exists; continue it with --resume X"},
		{measure("cap", "verify", "t.dat", "--cap", "riops=100", "--baseline", "R.json", "-o", "R.json"), "--out: R.json is also --baseline (an input)"},
		{measure("crosscheck", "t.dat", "--keep", "K"), "--keep: K/crosscheck.json exists"},
		{[]string{"k8s", "collect", "job1", "--out-dir", "/sys"}, "--out-dir: cannot create files in directory /sys"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			before := snapshot(t, dir)
			checkRefused(t, runInProcess(c.args...), c.mention)
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the directory changed:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// --force replaces an existing output, where the rule allows it.
func TestForceReplacesOutput(t *testing.T) {
	dir := t.TempDir()
	outputFixtures(t, dir)
	t.Chdir(dir)
	for _, args := range [][]string{
		{"observe", "--from", "O.json", "--workload", "X", "--force"},
		{"report", "R.json", "-o", "X", "--force", "--format", "markdown"},
		{"import", "F.json", "-o", "X", "--force"},
		{"merge", "R.json", "R2.json", "--label", "a", "--label", "b", "-o", "X", "--force"},
	} {
		testenv.Must(t, os.WriteFile("X", []byte("keep me\n"), 0o644))
		if r := runInProcess(args...); r.code != 0 {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if b, _ := os.ReadFile("X"); string(b) == "keep me\n" {
			t.Errorf("%v: X not replaced", args)
		}
	}
}
