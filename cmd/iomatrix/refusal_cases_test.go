package main

import (
	"os"
	"path/filepath"
	"testing"
)

// refusalCases is the table of TestRefusal: every command, every kind of
// breach issue 38 found, and NaN, Inf, negative and repeated values for
// the flags that take them. A case states the contract; one that fails
// is a bug of the command, not of the case.
func refusalCases() []refusal {
	var cs []refusal
	for _, part := range [][]refusal{measureCases(), replayCases(), burstCases(), sweepBurstCases(), capCases(), answerCases(), documentCases(), observeCases(), clusterCases(), commandCases()} {
		cs = append(cs, part...)
	}
	return cs
}

// Builders of a case: need, the files to copy, what the line names.
func on(n need, kind string, args ...string) refusal { return refusal{kind: kind, need: n, args: args} }

func (c refusal) with(files ...string) refusal { c.files = append(c.files, files...); return c }

func (c refusal) naming(names ...string) refusal { c.names = names; return c }

// short is how long a measuring case measures if it is wrongly accepted.
var short = []string{"--runtime", "1s", "--ramp", "0s"}

// shortCapped is short for a case under a cap, aligned to the throttle's
// slices so that no notice about them comes first.
var shortCapped = []string{"--runtime", "1s", "--ramp", "250ms"}

func join(parts ...[]string) []string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// measureCases are run's and sweep's.
func measureCases() []refusal {
	run := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"run", "$DEV", "--qd", "1"}, short, args)...)
	}
	sweep := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"sweep", "$DEV", "-o", "sweep.json"}, short, args)...)
	}
	return []refusal{
		on(needDevice, kindOverInput, join([]string{"run", "t.dat", "--size", "4MiB", "-o", "t.dat"}, short)...).naming("--out", "t.dat"),
		run(kindOverFile, "-o", "results.json").with("results.json").naming("--out", "results.json"),
		run(kindOverFile, "--lat-log", "lat.log").with("lat.log=results.json").naming("--lat-log", "lat.log"),
		run(kindOverInput, "--lat-log", "results.json", "-o", "results.json", "--force").naming("--out", "results.json"),
		run(kindWrongStatus, "--response-log", "resp.log").naming("--response-log", "--rate"),
		run(kindWrongStatus, "--lat-log-avg", "10ms").naming("--lat-log-avg", "--lat-log"),
		run(kindWrongStatus, "--lat-log", "lat.log", "--lat-log-avg", "1500us").naming("--lat-log-avg"),
		run(kindWrongStatus, "--lat-log", "lat.log", "--runtime", "auto").naming("--lat-log", "--runtime"),
		run(kindWrongStatus, "--lat-log", "lat.log", "--cap", "riops=100").naming("--lat-log", "--cap"),
		run(kindWrongStatus, "-o", "/sys/iomatrix.json").naming("--out"),
		run(kindWrongStatus, "--bssplit", "128m/100").naming("--bssplit"),
		run(kindWrongStatus, "--rw", "write", "--sync", "osync").naming("--sync"),
		run(kindWrongStatus, "--rw", "write", "--sync", "fsync:-1").naming("--sync"),
		run(kindWrongStatus, "--rw", "randread", "--sync", "dsync").naming("--sync"),
		run(kindWrongStatus, "--rw", "write", "--sync", "fdatasync:1", "--qd", "8").naming("--sync"),
		run(kindWrongStatus, "--rw", "write", "--sync", "fdatasync:1", "--poll", "--allow-destructive").naming("--sync"),
		run(kindNumber, "--qd", "-1").naming("--qd"),
		run(kindNumber, "--jobs", "-1").naming("--jobs"),
		run(kindNumber, "--rw", "randrw", "--rwmix", "NaN").naming("--rwmix"),
		run(kindNumber, "--ramp", "Inf").naming("--ramp"),
		run(kindNumber, "--runtime", "-1s").naming("--runtime"),
		run(kindNumber, "--runtime", "auto", "--min-runtime", "-1s").naming("--min-runtime"),
		run(kindNumber, "--runtime", "auto", "--max-runtime", "-1s").naming("--max-runtime"),
		run(kindNumber, "--runtime", "auto", "--precision", "Inf%").naming("--precision"),
		run(kindNumber, "--rate", "NaN").naming("--rate"),
		run(kindNumber, "--rate", "-5").naming("--rate"),
		run(kindNumber, "--rate", "NaN%").naming("--rate"),
		run(kindNumber, "--rate", "riops=Inf").naming("--rate"),
		run(kindNumber, "--size", "-16MiB").naming("--size"),
		run(kindNumber, "--size", "Inf").naming("--size"),
		run(kindNumber, "--sqpoll", "--sqpoll-cpu", "-1").naming("--sqpoll-cpu"),
		run(kindNumber, "--sqpoll", "--sqpoll-idle", "-1s").naming("--sqpoll-idle"),
		run(kindNumber, "--random-distribution", "zipf:NaN").naming("--random-distribution"),
		run(kindNumber, "--random-distribution", "pareto:Inf").naming("--random-distribution"),
		run(kindNumber, "--random-distribution", "normal:-5%").naming("--random-distribution"),
		run(kindNumber, "--bssplit", "4k/NaN").naming("--bssplit"),
		run(kindNumber, "--bssplit", "4k/-50:8k/150").naming("--bssplit"),
		run(kindNumber, "--rw", "randwrite", "--compress", "-1").naming("--compress"),
		run(kindNumber, "--rw", "randwrite", "--dedupe", "101").naming("--dedupe"),
		run(kindWrongStatus, "--rw", "randread", "--dedupe", "50").naming("--dedupe"),
		run(kindWrongStatus, "--rw", "randwrite", "--buffer_compress_percentage", "101").naming("--buffer_compress_percentage"),
		sweep(kindNumber, "--compress", "-5").naming("--compress"),
		run(kindNumber, "--cap", "riops=NaN").naming("--cap"),
		run(kindNumber, "--cap", "rbps=-1MiB").naming("--cap"),
		run(kindTwice, "--cap", "riops=1000,riops=2000").naming("--cap"),
		run(kindAfterIO, "--rate", "50%", "--engine", "psync").naming("--engine"),
		run(kindAfterIO, "--rate", "50%", "--runtime", "auto").naming("--runtime"),

		sweep(kindAfterIO, "--pattern", "randread:4k:1", "--rates", "10%,50%", "--engine", "psync").naming("--engine"),
		sweep(kindAfterIO, "--profile", "one.yaml", "--rates", "10%,50%", "--engine", "psync").with("one.yaml").naming("--engine"),
		sweep(kindAfterIO, "--pattern", "randread:4k:1", "--rates", "10%,50%", "--runtime", "auto").naming("--runtime"),
		sweep(kindAfterIO, "--profile", "loads.yaml", "--engine", "psync").with("loads.yaml").naming("--engine", "loads.yaml"),
		sweep(kindAfterIO, "--profile", "loads.yaml", "--runtime", "auto").with("loads.yaml").naming("--runtime", "loads.yaml"),
		sweep(kindAccepted, "--profile", "loads-nan.yaml").with("loads-nan.yaml").naming("loads-nan.yaml:3"),
		sweep(kindTwice, "--profile", "loads-twice.yaml").with("loads-twice.yaml").naming("loads-twice.yaml:3"),
		sweep(kindTwice, "--pattern", "randread:4k:1", "--rates", "10%,10%").naming("--rates"),
		sweep(kindMultiDoc, "--profile", "profile-two-docs.yaml").with("profile-two-docs.yaml").naming("profile-two-docs.yaml"),
		on(needDevice, kindOverInput, join([]string{"sweep", "$DEV", "--profile", "one.yaml", "-o", "one.yaml"}, short)...).with("one.yaml").naming("--out", "one.yaml"),
		on(needDevice, kindWrongStatus, join([]string{"sweep", "$DEV", "--profile", "one.yaml", "-o", "/sys/iomatrix.json"}, short)...).with("one.yaml").naming("--out"),
		sweep(kindNumber, "--profile", "one.yaml", "--precondition", "NaN").with("one.yaml").naming("--precondition"),
		sweep(kindNumber, "--pattern", "randread:4k:1", "--rates", "NaN%").naming("--rates"),
		sweep(kindNumber, "--pattern", "randread:4k:1", "--rates", "-10%").naming("--rates"),
		sweep(kindNumber, "--pattern", "randread:4k:1", "--rates", "Inf").naming("--rates"),
		sweep(kindNumber, "--pattern", "randread:4k:NaN", "--rates", "10%").naming("--pattern"),
	}
}

// capCases are cap verify's, throttle's and isolate's.
func capCases() []refusal {
	verify := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"cap", "verify", "$DEV", "--profile", "one.yaml", "--cap", "riops=1000"}, shortCapped, args)...).with("one.yaml")
	}
	verifyOut := func(kind string, args ...string) refusal {
		return verify(kind, append([]string{"-o", "verify.json"}, args...)...)
	}
	// --provisioned: a volume's own limits, no cgroup, no baseline.
	provisioned := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"cap", "verify", "$DEV", "--profile", "one.yaml", "-o", "verify.json"}, short, args)...).with("one.yaml")
	}
	throttle := func(kind string, args ...string) refusal {
		return on(needHost, kind, append([]string{"throttle"}, args...)...)
	}
	isolate := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"isolate", "$DEV", "--victim", "randread:4k:1", "--aggressor", "randread:4k:4"}, shortCapped, args)...)
	}
	capped := func(kind string, args ...string) refusal {
		return isolate(kind, append([]string{"--cap", "riops=500"}, args...)...)
	}
	iocost := func(kind string, args ...string) refusal {
		return isolate(kind, append([]string{"--control", "iocost"}, args...)...)
	}
	return []refusal{
		verify(kindOverInput, "--baseline", "results.json", "-o", "results.json").with("results.json").naming("--out", "--baseline", "results.json"),
		verify(kindOverFile, "-o", "results.json").with("results.json").naming("--out", "results.json"),
		verify(kindWrongStatus, "-o", "/sys/iomatrix.json").naming("--out"),
		// A notice of the ramp it adjusts comes before the refusal.
		on(needDevice, kindWrongStatus, "cap", "verify", "$DEV", "--profile", "one.yaml", "--cap", "riops=1000", "--runtime", "1s", "--ramp", "0s",
			"-o", "verify.json", "--baseline", "observation.json").with("one.yaml", "observation.json").naming("--baseline", "observation.json"),
		verifyOut(kindNumber, "--tolerance", "NaN%").naming("--tolerance"),
		verifyOut(kindNumber, "--tolerance", "-5%").naming("--tolerance"),
		verifyOut(kindNumber, "--cap", "riops=Inf").naming("--cap"),
		verifyOut(kindNumber, "--cap", "wiops=-1").naming("--cap"),
		verifyOut(kindNumber, "--seed", "-1").naming("--seed"),
		verifyOut(kindNumber, "--size", "NaN").naming("--size"),
		verifyOut(kindTwice, "--cap", "riops=1000,riops=500").naming("--cap"),
		// cap verify measures closed-loop cells: a profile's open-loop loads
		// would be dropped without a word.
		on(needDevice, kindAccepted, join([]string{"cap", "verify", "$DEV", "--profile", "loads.yaml", "--cap", "riops=1000", "-o", "verify.json"}, shortCapped)...).
			with("loads.yaml").naming("--profile", "loads.yaml"),

		provisioned(kindWrongStatus, "--provisioned", "iops=3000", "--cap", "riops=3000").naming("--provisioned", "--cap"),
		provisioned(kindWrongStatus, "--provisioned", "iops=3000", "--cgroup", "/sys/fs/cgroup").naming("--provisioned", "--cgroup"),
		provisioned(kindWrongStatus, "--provisioned", "iops=3000", "--baseline", "results.json").with("results.json").naming("--provisioned", "--baseline"),
		provisioned(kindWrongStatus, "--provisioned", "").naming("--provisioned", "empty"),
		provisioned(kindWrongStatus, "--provisioned", "tiops=3000").naming("--provisioned", "tiops"),
		provisioned(kindWrongStatus, "--provisioned", "iops").naming("--provisioned", "key=value"),
		provisioned(kindWrongStatus, "--provisioned", "iops=3000,").naming("--provisioned", "key=value"),
		provisioned(kindNumber, "--provisioned", "iops=NaN").naming("--provisioned", "iops=NaN"),
		provisioned(kindNumber, "--provisioned", "iops=-3000").naming("--provisioned", "iops=-3000"),
		provisioned(kindNumber, "--provisioned", "iops=0").naming("--provisioned", "iops=0"),
		provisioned(kindNumber, "--provisioned", "bps=Inf").naming("--provisioned", "bps=Inf"),
		provisioned(kindNumber, "--provisioned", "riops=1e3").naming("--provisioned", "riops=1e3"),
		provisioned(kindTwice, "--provisioned", "iops=3000,IOPS=300").naming("--provisioned", "twice"),
		provisioned(kindOverFile, "--provisioned", "iops=3000", "-o", "results.json").with("results.json").naming("--out", "results.json"),

		throttle(kindNumber, "--cap", "riops=NaN", "--", "true").naming("--cap"),
		throttle(kindNumber, "--cap", "wbps=-1MiB", "--", "true").naming("--cap"),
		throttle(kindNumber, "--cap", "riops=5", "--pid", "-1").naming("--pid"),
		throttle(kindTwice, "--cap", "riops=5,riops=6", "--", "true").naming("--cap"),

		capped(kindNumber, "--cap", "riops=NaN").naming("--cap"),
		capped(kindNumber, "--min-isolation", "NaN%").naming("--min-isolation"),
		capped(kindNumber, "--min-isolation", "-5%").naming("--min-isolation"),
		capped(kindNumber, "--min-isolation", "Inf").naming("--min-isolation"),
		capped(kindNumber, "--victim", "randread:4k:1:NaN").naming("--victim"),
		capped(kindNumber, "--aggressor", "randread:4k:-1").naming("--aggressor"),
		capped(kindNumber, "--size", "NaN").naming("--size"),
		capped(kindNumber, "--seed", "-1").naming("--seed"),
		capped(kindAccepted, "--sysfs", "/nonexistent").naming("--sysfs"),
		capped(kindAccepted, "--weight", "victim=5").naming("--weight"),
		iocost(kindNumber, "--iomax-tries", "-1").naming("--iomax-tries"),
		iocost(kindNumber, "--weight", "victim=NaN").naming("--weight"),
		iocost(kindNumber, "--weight", "aggressor=-5").naming("--weight"),
		iocost(kindTwice, "--weight", "aggressor=100,aggressor=200").naming("--weight"),
		iocost(kindWrongStatus, "--sysfs", "/nonexistent").naming("--sysfs"),
		iocost(kindWrongStatus, "--cgroupfs", "/nonexistent").naming("--cgroupfs"),
	}
}

// answerCases are crosscheck's and fit's, with and without a rehearsal.
func answerCases() []refusal {
	cross := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"crosscheck", "$DEV", "--pairs", "1"}, short, args)...)
	}
	one := []string{"--pattern", "randread:4k:1"}
	rehearse := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"fit", "node-a.json", "--workload", "reads.yaml", "--rehearse", "$DEV"}, short, args)...).
			with("node-a.json", "reads.yaml")
	}
	rehearseOut := func(kind string, args ...string) refusal {
		return rehearse(kind, append([]string{"-o", "rehearsal.json"}, args...)...)
	}
	fit := func(kind, workload string) refusal {
		return on(needNothing, kind, "fit", "node-a.json", "--workload", workload).with("node-a.json", workload)
	}
	need := func(kind, spec string) refusal {
		return on(needNothing, kind, "fit", "node-a.json", "--need", spec).with("node-a.json").naming("--need")
	}
	return []refusal{
		cross(kindOverFile, append(one, "--keep", "keep")...).with("keep/crosscheck.json=results.json").naming("--keep", "crosscheck.json"),
		cross(kindWrongStatus, "--pattern", "randread::1 bssplit=128m/100").naming("bssplit"),
		cross(kindWrongStatus, "--pattern", "randread:4k:1 buffer_compress_percentage=50").naming("buffer_compress_percentage"),
		cross(kindTwice, "--pattern", "randread:4k:1", "--pattern", "randread:4k:1").naming("--pattern"),
		cross(kindNumber, append(one, "--pairs", "-1")...).naming("--pairs"),
		cross(kindNumber, append(one, "--runtime", "NaN")...).naming("--runtime"),
		cross(kindNumber, append(one, "--ramp", "-1s")...).naming("--ramp"),
		cross(kindNumber, append(one, "--size", "Inf")...).naming("--size"),
		cross(kindNumber, append(one, "--sqpoll", "--sqpoll-cpu", "-1")...).naming("--sqpoll-cpu"),
		cross(kindNumber, "--pattern", "randread:4k:1 random_distribution=zipf:NaN").naming("--pattern"),

		rehearse(kindOverInput, "-o", "node-a.json").naming("--out", "node-a.json"),
		rehearse(kindOverInput, "-o", "reads.yaml").naming("--out", "reads.yaml"),
		on(needDevice, kindOverInput, join([]string{"fit", "node-a.json", "--workload", "reads.yaml", "--rehearse", "rehearsal.dat", "--size", "4MiB",
			"-o", "rehearsal.dat"}, short)...).with("node-a.json", "reads.yaml").naming("--out", "rehearsal.dat"),
		rehearse(kindOverFile, "-o", "results.json").with("results.json").naming("--out", "results.json"),
		rehearse(kindWrongStatus, "-o", "/sys/iomatrix.json").naming("--out"),
		rehearseOut(kindAfterIO, "--engine", "psync").naming("--engine"),
		rehearseOut(kindNumber, "--runtime", "Inf").naming("--runtime"),
		rehearseOut(kindNumber, "--ramp", "-1s").naming("--ramp"),
		rehearseOut(kindNumber, "--size", "NaN").naming("--size"),
		rehearseOut(kindNumber, "--seed", "-1").naming("--seed"),

		fit(kindInjected, "workload-bs-injected.yaml").naming("workload-bs-injected.yaml:2"),
		fit(kindInjected, "workload-latency-injected.yaml").naming("workload-latency-injected.yaml:2"),
		fit(kindInjected, "workload-concurrency-fraction.yaml").naming("workload-concurrency-fraction.yaml:2"),
		fit(kindWrongStatus, "workload-newline.yaml").naming("workload-newline.yaml:2"),
		fit(kindMultiDoc, "workload-two-docs.yaml").naming("workload-two-docs.yaml:3", "workload-two-docs.yaml:4"),
		fit(kindTwice, "workload-name-twice.yaml").naming("workload-name-twice.yaml:3"),
		need(kindNumber, "read=NaN,bs=4k"),
		need(kindNumber, "read=10,write=Inf,bs=4k"),
		need(kindNumber, "read=10,bs=4k,qd=-1"),
		need(kindNumber, "read=10,bs=4k,p99<-2ms"),
	}
}

// refusalFixtures are the files a case may copy into its working
// directory: testdata/refusal's, and good documents of other tests.
func refusalFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	sources := map[string]string{
		"results.json": fixture,
		"node-a.json":  fleetDir + "node-a.json",
		"node-b.json":  fleetDir + "node-b.json",
		"systems.yaml": "testdata/fit/systems.yaml",
		"fio.json":     "../../iotest/fio/testdata/randread.json",
	}
	entries, err := os.ReadDir("testdata/refusal")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "README.md" {
			sources[e.Name()] = filepath.Join("testdata/refusal", e.Name())
		}
	}
	lib := map[string][]byte{}
	for name, path := range sources {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lib[name] = data
	}
	return lib
}
