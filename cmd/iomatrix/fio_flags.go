package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest/fio"
)

// fioAliases are fio's names of options that mean the same in iomatrix,
// so a fio command line's options carry over. They are not flags of their
// own, so --help does not list them; docs/run.md does, in one line.
var fioAliases = map[string]string{
	"iodepth":                    "qd",
	"numjobs":                    "jobs",
	"rwmixread":                  "rwmix",
	"ramp_time":                  "ramp",
	"output-format":              "format",
	"ioengine":                   "engine",
	"blocksize":                  "bs",
	"readwrite":                  "rw",
	"random_distribution":        "random-distribution",
	"buffer_compress_percentage": "compress",
	"dedupe_percentage":          "dedupe",
}

// fioAlwaysOptions are fio's options for what iomatrix always does, each
// with why asking for the opposite is refused.
var fioAlwaysOptions = map[string]string{
	"direct":          "iomatrix measures O_DIRECT I/O only (buffered I/O would measure the page cache)",
	"time_based":      "iomatrix always runs each pattern for --runtime",
	"group_reporting": "iomatrix always reports the jobs of a pattern together",
}

// fioNames is the flag-name normalization that makes fio's names aliases.
func fioNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if n, ok := fioAliases[name]; ok {
		return pflag.NormalizedName(n)
	}
	return pflag.NormalizedName(name)
}

// typedSpellings scans a command line for the flags given by one of fio's
// names: for each, by iomatrix's name, the spelling whose value stands
// (the last given, when both were). Errors name a flag by iomatrix's
// name; nameTyped puts back the one the user typed.
func typedSpellings(args []string) map[string]string {
	typed := map[string]string{}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if own, alias := fioAliases[name]; alias {
			typed[own] = name
		} else {
			delete(typed, name) // iomatrix's own name, given after fio's
		}
	}
	return typed
}

// nameTyped rewrites an error line that begins with a flag's iomatrix
// name ("--qd: ...") to begin with the spelling typed ("--iodepth: ...").
func nameTyped(msg string, typed map[string]string) string {
	for own, alias := range typed {
		if rest, ok := strings.CutPrefix(msg, "--"+own+":"); ok {
			return "--" + alias + ":" + rest
		}
	}
	return msg
}

// fioHint says what to do instead of a fio option that iomatrix does not
// take, on the commands that measure; "" when there is nothing to say.
func fioHint(cmd *cobra.Command, name string) string {
	if cmd.Flags().Lookup("engine") == nil {
		return ""
	}
	switch name {
	case "filename", "directory":
		return "give the target as the argument: " + cmd.CommandPath() + " /path/to/file-or-device"
	case "name":
		return "iomatrix names each pattern from its settings (e.g. rand-4k-r70-qd32): leave it out"
	case "output":
		return "the results document (JSON) is written with --out FILE; the text goes to stdout"
	case "rwmixwrite":
		return "give the read share instead: --rwmix 100-N"
	}
	return ""
}

// engineName maps fio's engine names to iomatrix's (fio.Engine).
func engineName(engine string) (string, error) {
	name, err := fio.Engine(engine)
	return name, optionError(err)
}

// fioAlways is a fio option for what iomatrix always does: accepted when it
// asks for that ("--direct=1"), refused when it asks for the opposite.
type fioAlways struct{ opposite string }

// addFioAlways registers fio's no-op options on a measuring command,
// hidden from --help.
func addFioAlways(f *pflag.FlagSet) {
	for name, opposite := range fioAlwaysOptions {
		f.Var(fioAlways{opposite}, name, "fio's option: iomatrix always does this")
		f.Lookup(name).NoOptDefVal = "1"
		_ = f.MarkHidden(name) // fails only for a flag not defined just above
	}
}

func (v fioAlways) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New(strconv.Quote(s) + " must be 1 or 0")
	}
	if !on {
		return errors.New(v.opposite)
	}
	return nil
}

func (fioAlways) String() string { return "" }
func (fioAlways) Type() string   { return "fio" }
