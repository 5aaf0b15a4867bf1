package isolate

import (
	"errors"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// Check refuses what cannot run, before any I/O, naming the option at
// fault as the command line spells it; a cap test that can run comes
// back with its pair.
func TestCheck(t *testing.T) {
	flag := func(o string) string { return "--" + o }
	ok := Asked{Victim: "randread:4k:1", Aggressor: "randwrite:16k:32", Cap: "wiops=500", MinIsolation: 0.9}
	io := ok
	io.Control, io.Cap, io.Weights, io.IOMaxTries = "iocost", "", "victim=500,aggressor=100", DefaultSearches
	for _, tc := range []struct {
		name string
		edit func(*Asked)
		base Asked
		want string // the error's text, the options spelled as flags
	}{
		{"no cap", func(a *Asked) { a.Cap = "" }, ok, "--cap: required: the limits to put on the aggressor (e.g. --cap wiops=500)"},
		{"a cgroup", func(a *Asked) { a.Cgroup = "/x" }, ok, "--cgroup: isolate caps the aggressor in a fresh cgroup of its own: give --cap"},
		{"auto", func(a *Asked) { a.Auto = true }, ok, "--runtime: auto is not for isolate: the victim and the aggressor must share one fixed window"},
		{"victim", func(a *Asked) { a.Victim = "randread:4k" }, ok, `--victim "randread:4k": want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70`},
		{"aggressor", func(a *Asked) { a.Aggressor = "randread:4k:0" }, ok, `--aggressor "randread:4k:0": QD: 0 is outside 1..256`},
		{"iocost cgroup", func(a *Asked) { a.Cgroup = "/x" }, io, "--cgroup: isolate puts the victim and the aggressor in fresh cgroups of their own"},
		{"iocost tries", func(a *Asked) { a.IOMaxTries = 21 }, io, "--iomax-tries: 21: give 1 to 20 phases"},
		{"iocost no tries", func(a *Asked) { a.IOMaxTries = 0 }, io, "--iomax-tries: 0: give 1 to 20 phases"},
		{"negative tries under a cap", func(a *Asked) { a.IOMaxTries = -1 }, ok, "--iomax-tries: -1: give 1 to 20 phases"},
		{"iocost weights", func(a *Asked) { a.Weights = "victim=0" }, io, "--weight: victim=0: a weight is a whole number from 1 to 10000"},
		{"iocost cap", func(a *Asked) { a.Cap = "wiops=lots" }, io, "--cap: invalid cap: wiops=lots is not a positive whole number"},
	} {
		a := tc.base
		tc.edit(&a)
		_, err := Check(a)
		var ie *fault.InputError
		if !errors.As(err, &ie) || spelled(err, flag) != tc.want {
			t.Errorf("%s: %v; want bad input %q", tc.name, err, tc.want)
		}
	}
	test, err := Check(ok)
	if err != nil || test.device != nil || test.Victim.Name() != "rand-4k-r100-qd1" || test.Aggressor.Name() != "rand-16k-r0-qd32" || test.MinIsolation != 0.9 {
		t.Errorf("a cap test: %+v, %v", test, err)
	}
}

// spelled is err's text as a front end shows it: the option of an
// InputError, and those a Mention names, spelled by name.
func spelled(err error, name fault.Namer) string {
	var ie *fault.InputError
	msg := err.Error()
	if errors.As(err, &ie) && ie.Option != "" {
		msg = name(ie.Option) + ": " + ie.Err.Error()
	}
	var m *fault.Mention
	if errors.As(err, &m) {
		return msg[:len(msg)-len(m.Error())] + m.Text(name)
	}
	return msg
}
