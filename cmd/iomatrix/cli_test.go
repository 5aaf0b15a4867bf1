package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// fio's names of iomatrix's options are aliases, its other options get a
// hint, and a bare number of seconds is a duration. Every case stops
// before any I/O: either refused for the flag itself, or accepted and
// then refused for the target's missing directory, the last check before
// the target is touched.
func TestFioFlags(t *testing.T) {
	dir := t.TempDir()
	nowhere := filepath.Join(dir, "missing", "t.dat")
	run := func(args ...string) []string { return append([]string{"run", nowhere}, args...) }
	sweep := func(args ...string) []string {
		return append([]string{"sweep", nowhere, "--out", filepath.Join(dir, "s.json")}, args...)
	}
	const accepted = "missing does not exist" // got past every flag
	cases := []struct {
		name    string
		args    []string
		mention string
	}{
		{"iodepth is --qd", run("--iodepth", "300"), "--iodepth: 300 is outside 1..256"},
		{"iodepth junk", run("--iodepth", "many"), `--iodepth: "many" must be an integer`},
		{"the last spelling named", run("--qd", "4", "--iodepth", "300"), "--iodepth: 300"},
		{"qd after iodepth", run("--iodepth", "4", "--qd", "300"), "--qd: 300"},
		{"qd itself", run("--qd", "300"), "--qd: 300"},
		{"iodepth accepted", run("--iodepth=8"), accepted},
		{"numjobs is --jobs", run("--numjobs", "65"), "--numjobs: 65 is outside 1..64"},
		{"numjobs accepted", run("--numjobs", "4"), accepted},
		{"rwmixread is --rwmix", run("--rw", "randrw", "--rwmixread", "101"), "--rwmixread: 101"},
		{"rwmixread without randrw", run("--rwmixread", "70"), "--rwmixread: only applies to --rw randrw"},
		{"rwmixread accepted", run("--rw", "randrw", "--rwmixread=70"), accepted},
		{"ramp_time is --ramp, in seconds", run("--ramp_time", "-1"), "--ramp_time: -1s must not be negative"},
		{"blocksize is --bs", run("--blocksize", "3000"), "--blocksize: 3000 bytes is not a multiple of 512"},
		{"blocksize junk", run("--blocksize=4q"), `--blocksize: not a size: "4q"`},
		{"readwrite is --rw", run("--readwrite", "trim"), `--readwrite: "trim" is not one of`},
		{"rw itself", run("--rw", "trim"), `--rw: "trim" is not one of`},
		{"ioengine io_uring", run("--ioengine", "io_uring"), accepted},
		{"engine io_uring", run("--engine", "io_uring"), accepted},
		{"ioengine psync", run("--ioengine=psync"), accepted},
		{"ioengine libaio", run("--ioengine", "libaio"), "--ioengine: libaio is not an iomatrix engine; use uring"},
		{"ioengine sync", run("--ioengine", "sync"), "use psync"},
		{"output-format normal", run("--output-format", "normal"), accepted},
		{"output-format yaml", run("--output-format", "yaml"), `--output-format: "yaml" is not one of`},
		{"output-format json+", run("--output-format=json+"), "--output-format: json+ is fio's; iomatrix's json already holds the latency percentiles: use --format json"},
		{"runtime in seconds", run("--runtime", "0"), "--runtime: 0s must be positive"},
		{"runtime 2 accepted", run("--runtime", "2"), accepted},
		{"runtime not a duration", run("--runtime", "2x"), `--runtime: not a duration: "2x" (give seconds, e.g. 30, or a duration such as 1m30s or 500ms), or auto`},
		{"runtime auto", run("--runtime", "auto"), accepted},
		{"runtime AUTO", sweep("--runtime=AUTO", "--max-runtime", "20"), accepted},
		{"auto bounds", run("--runtime", "auto", "--min-runtime", "5", "--max-runtime", "1m", "--precision", "0.5%"), accepted},
		{"max-runtime below the window", run("--runtime", "auto", "--max-runtime", "4s"), "--max-runtime: 4s is shorter than the 5 one-second rounds"},
		{"min above max", sweep("--runtime", "auto", "--min-runtime", "30s", "--max-runtime", "20s"), "--min-runtime: 30s is longer than the maximum runtime 20s"},
		{"precision junk", run("--runtime", "auto", "--precision", "tight"), `--precision: "tight" is not a percentage`},
		{"precision NaN", run("--runtime", "auto", "--precision", "NaN"), `--precision: "NaN" is not a percentage`},
		{"precision spaced", run("--runtime", "auto", "--precision", "1 %"), accepted},
		{"precision zero", run("--runtime", "auto", "--precision", "0%"), "--precision: 0 % is not between 0 and 50 %"},
		{"precision huge", run("--runtime", "auto", "--precision", "80"), "--precision: 80 % is not between 0 and 50 %"},
		{"max-runtime without auto", run("--max-runtime", "20s"), "--max-runtime: only applies with --runtime auto (got --runtime 1m0s)"},
		{"precision without auto", sweep("--runtime", "10s", "--precision", "1%"), "--precision: only applies with --runtime auto (got --runtime 10s)"},
		{"direct=1", run("--direct=1"), accepted},
		{"direct", run("--direct"), accepted},
		{"direct=0", run("--direct=0"), "--direct: iomatrix measures O_DIRECT I/O only"},
		{"time_based", run("--time_based"), accepted},
		{"group_reporting", run("--group_reporting"), accepted},
		{"filename", run("--filename=/dev/sdb"), "--filename: give the target as the argument: iomatrix run "},
		{"name", run("--name=job1"), "--name: iomatrix names each pattern"},
		{"output", run("--output=x.json"), "--out FILE"},
		{"rwmixwrite", run("--rwmixwrite=30"), "--rwmix 100-N"},
		{"sweep ramp_time", sweep("--ramp_time", "-2"), "--ramp_time: -2s"},
		{"sweep precondition in seconds", sweep("--precondition", "-5"), "--precondition: -5s must not be negative"},
		{"sweep filename", sweep("--filename", "x"), "iomatrix sweep /path"},
		{"sweep ioengine", sweep("--ioengine", "io_uring"), accepted},
		{"report has no target flag", []string{"report", fixture, "--filename", "x"}, "unknown flag: --filename"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(c.args...), c.mention)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Error("a refused run created something")
	}

	// --output-format json is --format json: even the refusal is JSON.
	r := runInProcess(run("--output-format", "json")...)
	var e struct {
		Error string `json:"error"`
		Kind  string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || r.code != exitUsage || !strings.Contains(e.Error, accepted) {
		t.Errorf("--output-format json: exit %d, stderr %q (%v)", r.code, r.stderr, err)
	}

	// The values really arrive: profiles prints them and measures nothing.
	r = runInProcess("profiles", "--runtime", "2", "--ramp_time", "1.5")
	if r.code != 0 || !strings.Contains(r.stdout, "at 2s runtime + 1.5s ramp") {
		t.Errorf("profiles --runtime 2 --ramp_time 1.5: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// Bad input in the user's terms, on one line, with exit status 2.
func TestUsageMessages(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	cases := []struct {
		name    string
		args    []string
		mention string
		not     string // must not appear
	}{
		{"seed -1", []string{"run", target, "--seed", "-1"}, `--seed: "-1" must be a non-negative integer`, "strconv"},
		{"seed junk", []string{"sweep", target, "--seed", "x"}, `--seed: "x" must be a non-negative integer`, "strconv"},
		{"seed too large", []string{"run", target, "--seed", "99999999999999999999"}, "--seed: \"99999999999999999999\" is out of range", "strconv"},
		{"qd junk", []string{"run", target, "--qd", "many"}, `--qd: "many" must be an integer`, "strconv"},
		{"bool junk", []string{"run", target, "--force=maybe"}, `--force: "maybe" must be true or false`, "strconv"},
		{"bssplit of one size too large", []string{"run", target, "--bssplit", "128m/100"}, "--bssplit: 134217728 bytes is outside 512B..64MiB", "--bs:"},
		{"bssplit too large", []string{"run", target, "--bssplit", "4k/50:128m/50"}, "--bssplit: size 128MiB is not a multiple", "--bs:"},
		{"unknown command", []string{"nosuch"}, `unknown command "nosuch"`, "Did you mean"},
		{"misspelt command", []string{"sweeep"}, "did you mean sweep?", "\t"},
		{"unknown flag", []string{"run", target, "--no-such-flag"}, "unknown flag: --no-such-flag", ""},
		{"help on no command", []string{"help", "nosuch"}, `unknown command "nosuch" (see iomatrix --help)`, "Usage"},
		{"help misspelt", []string{"help", "sweeep"}, "did you mean sweep?", "Usage"},
		{"help on no subcommand", []string{"help", "k8s", "nosuch"}, `unknown command "nosuch" (see iomatrix k8s --help)`, "Usage"},
		{"help misspelt subcommand", []string{"help", "k8s", "manfest"}, "did you mean manifest? (see iomatrix k8s --help)", "Usage"},
		{"help past a command", []string{"help", "run", "extra"}, `unknown command "extra" (see iomatrix run --help)`, "Usage"},
		{"no subcommand of cap", []string{"cap", "nosuch"}, `unknown command "nosuch" (see iomatrix cap --help)`, "Usage"},
		{"misspelt subcommand of cap", []string{"cap", "verfy"}, "did you mean verify? (see iomatrix cap --help)", "Usage"},
		{"misspelt subcommand of k8s", []string{"k8s", "manfest"}, "did you mean manifest? (see iomatrix k8s --help)", "Usage"},
		{"misspelt subcommand of iocost", []string{"iocost", "rest", "vda"}, "did you mean reset? (see iomatrix iocost --help)", "Usage"},
		{"no subcommand of completion", []string{"completion", "nosuch"}, `unknown command "nosuch" (see iomatrix completion --help)`, "Usage"},
		{"cobra's own argument check", []string{"completion", "bash", "extra"}, `unknown command "extra" for "iomatrix completion bash" (usage: iomatrix completion bash)`, "Usage"},
		{"too few arguments", []string{"iocost", "model"}, "iocost model needs at least one results file (RESULTS.json...), got 0", "requires"},
		{"missing argument", []string{"compare", "a.json"}, "compare takes 2 argument(s) (BASE.json NEW.json), got 1", ""},
		{"no argument taken", []string{"cap", "cleanup", "x"}, `cap cleanup takes no argument, got ["x"]`, "at most 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runInProcess(c.args...)
			checkRefused(t, r, c.mention)
			if c.not != "" && strings.Contains(r.stderr, c.not) {
				t.Errorf("stderr %q shows %q", r.stderr, c.not)
			}
		})
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Error("a refused run created its target")
	}
	for _, args := range [][]string{{"help"}, {"help", "sweep"}, {"help", "k8s", "manifest"}} {
		r := runInProcess(args...)
		if want := "Usage:\n  iomatrix " + strings.Join(args[1:], " "); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, want) {
			t.Errorf("%v: exit %d, stderr %q, stdout lacks %q:\n%s", args, r.code, r.stderr, want, r.stdout)
		}
	}
}

// --size states its default once per kind of target, not twice.
func TestSizeHelpStatesDefaultOnce(t *testing.T) {
	r := runInProcess("run", "--help")
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--size") {
			line = l
		}
	}
	if r.code != 0 || strings.Count(line, "16GiB") != 1 || strings.Count(line, "(default") != 1 {
		t.Errorf("--size help %q: want 16GiB and one \"(default\"", line)
	}
}

// Every command group refuses a word that names none of its
// subcommands, and every other command a wrong number of arguments, with
// exit status 2 on one line: never its help with exit status 0, never
// cobra's plain error with exit status 1.
func TestEveryGroupRefusesUnknownSubcommand(t *testing.T) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() == "help" || cmd.Hidden {
			return
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		if cmd.HasSubCommands() {
			t.Run(strings.Join(path, " "), func(t *testing.T) {
				checkRefused(t, runInProcess(append(path, "nosuch")...), `unknown command "nosuch"`)
			})
		} else if cmd.Args != nil {
			args := append(path, strings.Split(strings.Repeat("x,", 9)+"x", ",")...)
			if r := runInProcess(args...); r.code == exitFailure || r.code == exitOK {
				t.Errorf("%v: exit %d: %q", args, r.code, r.stderr)
			}
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(newRootCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard}))
}
