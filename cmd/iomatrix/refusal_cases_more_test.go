package main

// documentCases are those of the commands that read documents and write
// one: report, compare, merge, import and iocost.
func documentCases() []refusal {
	files := func(kind string, args ...string) refusal { return on(needNothing, kind, args...) }
	apply := func(kind string, args ...string) refusal {
		return on(needDevice, kind, append([]string{"iocost", "apply", "$DEV", "--from", "iocost.json", "--dry-run", "--state", "state.json"}, args...)...).
			with("iocost.json")
	}
	return []refusal{
		files(kindOverInput, "report", "results.json", "-o", "results.json").with("results.json").naming("--out", "results.json"),
		files(kindOverInput, "report", "observation.json", "-o", "observation.json").with("observation.json").naming("--out", "observation.json"),
		files(kindOverFile, "report", "results.json", "-o", "node-a.json").with("results.json", "node-a.json").naming("--out", "node-a.json"),
		files(kindWrongStatus, "report", "results.json", "-o", "/sys/iomatrix.md").with("results.json").naming("--out"),
		files(kindNumber, "report", "results.json", "--outlier", "-5%").with("results.json").naming("--outlier"),
		files(kindNumber, "report", "results.json", "--metric", "iops@p99<NaNms").with("results.json").naming("--metric"),

		files(kindNumber, "compare", "results.json", "node-a.json", "--metric", "iops@p99<-2ms").with("results.json", "node-a.json").naming("--metric"),
		files(kindWrongStatus, "compare", "results.json", "observation.json").with("results.json", "observation.json").naming("observation.json"),

		files(kindOverInput, "merge", "node-a.json", "node-b.json", "-o", "node-a.json").with("node-a.json", "node-b.json").naming("--out", "node-a.json"),
		files(kindOverFile, "merge", "node-a.json", "node-b.json", "-o", "results.json").with("node-a.json", "node-b.json", "results.json").naming("--out", "results.json"),
		files(kindWrongStatus, "merge", "node-a.json", "node-b.json", "-o", "/sys/iomatrix.json").with("node-a.json", "node-b.json").naming("--out"),
		files(kindNumber, "merge", "node-a.json", "node-b.json", "--outlier", "Inf").with("node-a.json", "node-b.json").naming("--outlier"),
		files(kindTwice, "merge", "node-a.json", "node-b.json", "--label", "a", "--label", "a").with("node-a.json", "node-b.json").naming("--label"),
		files(kindTwice, "merge", "node-a.json", "./node-a.json").with("node-a.json").naming("./node-a.json"),

		files(kindAccepted, "import", "fio-negative-iops.json").with("fio-negative-iops.json").naming("fio-negative-iops.json"),
		files(kindOverInput, "import", "fio.json", "-o", "fio.json").with("fio.json").naming("--out", "fio.json"),
		files(kindOverFile, "import", "fio.json", "-o", "results.json").with("fio.json", "results.json").naming("--out", "results.json"),
		files(kindWrongStatus, "import", "fio.json", "-o", "/sys/iomatrix.json").with("fio.json").naming("--out"),
		files(kindTwice, "import", "fio.json", "fio.json").with("fio.json").naming("fio.json"),

		files(kindWrongStatus, "iocost", "model").naming("iocost model"),
		files(kindOverInput, "iocost", "model", "iocost.json", "-o", "iocost.json").with("iocost.json").naming("--out", "iocost.json"),
		files(kindOverFile, "iocost", "model", "iocost.json", "-o", "results.json").with("iocost.json", "results.json").naming("--out", "results.json"),
		files(kindWrongStatus, "iocost", "model", "iocost.json", "-o", "/sys/iocost.txt").with("iocost.json").naming("--out"),
		files(kindTwice, "iocost", "model", "iocost.json", "iocost.json").with("iocost.json").naming("iocost.json"),
		apply(kindAccepted, "--vrate", "NaN-100").naming("--vrate"),
		apply(kindAccepted, "--vrate", "1-NaN").naming("--vrate"),
		apply(kindNumber, "--vrate", "1-Inf").naming("--vrate"),
		apply(kindTwice, "--from", "iocost.json").naming("--from", "iocost.json"),
		on(needDevice, kindOverInput, "iocost", "apply", "$DEV", "--from", "iocost.json", "--dry-run", "--state", "iocost.json").with("iocost.json").
			naming("--state", "iocost.json"),
		apply(kindWrongStatus, "--sysfs", "/nonexistent").naming("--sysfs"),
		apply(kindWrongStatus, "--cgroupfs", "/nonexistent").naming("--cgroupfs"),
		on(needDevice, kindWrongStatus, "iocost", "show", "$DEV", "--state", "state.json", "--sysfs", "/nonexistent").naming("--sysfs"),
		on(needDevice, kindWrongStatus, "iocost", "show", "$DEV", "--state", "state.json", "--cgroupfs", "/nonexistent").naming("--cgroupfs"),
		on(needDevice, kindWrongStatus, "iocost", "reset", "$DEV", "--state", "state.json", "--sysfs", "/nonexistent").naming("--sysfs"),
		on(needDevice, kindUnknownSub, "iocost", "rest", "$DEV").naming(`"rest"`),
	}
}

// observeCases are observe's: sampling (briefly, if wrongly accepted) or
// writing the workload of an observation (--from).
func observeCases() []refusal {
	sample := func(kind string, args ...string) refusal {
		return on(needHost, kind, append([]string{"observe", "-o", "obs.json", "--duration", "1s", "--interval", "100ms", "-q"}, args...)...)
	}
	from := func(kind string, args ...string) refusal {
		return on(needHost, kind, append([]string{"observe", "--from", "observation.json"}, args...)...).with("observation.json")
	}
	const dsn = "root@tcp(127.0.0.1:1)/"
	const pgDSN = "host=127.0.0.1 port=1 user=postgres"
	return []refusal{
		from(kindOverInput, "--workload", "observation.json").naming("--workload", "observation.json"),
		on(needHost, kindOverInput, "observe", "-o", "week.json", "--workload", "week.json", "--duration", "1s", "--interval", "100ms", "-q").
			naming("--workload", "--out", "week.json"),
		from(kindOverFile, "--workload", "systems.yaml").with("systems.yaml").naming("--workload", "systems.yaml"),
		sample(kindOverFile).with("obs.json=results.json").naming("--out", "obs.json"),
		from(kindWrongStatus, "--workload", "/sys/iomatrix.yaml").naming("--workload"),
		on(needHost, kindWrongStatus, "observe", "-o", "/sys/iomatrix.json", "--duration", "1s", "--interval", "100ms", "-q").naming("--out"),
		sample(kindAccepted, "--sysfs", "/nonexistent").naming("--sysfs"),
		sample(kindAccepted, "--mysql", "").naming("--mysql"),
		sample(kindAccepted, "--mysql", "erp=").naming("--mysql"),
		sample(kindAccepted, "--mysql", "erp=env:IOMATRIX_REFUSAL_UNSET").naming("--mysql"),
		sample(kindTwice, "--cgroup", "/=a", "--cgroup", "/=b").naming("--cgroup"),
		sample(kindTwice, "--mysql", "erp="+dsn, "--mysql", "erp="+dsn).naming("--mysql"),
		sample(kindAccepted, "--postgres", "").naming("--postgres"),
		sample(kindAccepted, "--postgres", "erp=").naming("--postgres"),
		sample(kindAccepted, "--postgres", "erp=env:IOMATRIX_REFUSAL_UNSET").naming("--postgres"),
		sample(kindTwice, "--postgres", "erp="+pgDSN, "--postgres", "erp="+pgDSN).naming("--postgres"),
		sample(kindTwice, "--mysql", "erp="+dsn, "--postgres", "erp="+pgDSN).naming("--postgres"),
		on(needDevice, kindTwice, "observe", "$DEVNAME", "$DEVNAME", "-o", "obs.json", "--duration", "1s", "--interval", "100ms", "-q").naming("$DEVNAME"),
		on(needDevice, kindTwice, "observe", "$DEVNAME", "$DEVNUM", "-o", "obs.json", "--duration", "1s", "--interval", "100ms", "-q").naming("$DEVNAME", "$DEVNUM"),
		sample(kindInjected, "--cgroup", "/=erp\nweb").naming("--cgroup"),
		sample(kindNumber, "--interval", "NaN").naming("--interval"),
		sample(kindNumber, "--duration", "-1s").naming("--duration"),
		sample(kindNumber, "--window", "-1m").naming("--window"),
		sample(kindNumber, "--save-every", "-1s").naming("--save-every"),
		from(kindNumber, "--workload", "w.yaml", "--headroom", "NaN%").naming("--headroom"),
		from(kindNumber, "--workload", "w.yaml", "--headroom", "-10%").naming("--headroom"),
		from(kindNumber, "--workload", "w.yaml", "--headroom", "Inf%").naming("--headroom"),
	}
}

// clusterCases are k8s's, with no cluster configured: a case that gets as
// far as the cluster is refused for that instead.
func clusterCases() []refusal {
	k8s := func(kind string, args ...string) refusal {
		return on(needNothing, kind, append([]string{"k8s"}, args...)...)
	}
	return []refusal{
		k8s(kindAfterIO, "run", "--", "--pattern", "randread:4k:1", "--rates", "10%,50%", "--engine", "psync").naming("--engine"),
		k8s(kindAfterIO, "manifest", "--profile", "loads.yaml", "--", "--engine", "psync").with("loads.yaml").naming("--engine", "loads.yaml"),
		k8s(kindMultiDoc, "manifest", "--profile", "profile-two-docs.yaml").with("profile-two-docs.yaml").naming("profile-two-docs.yaml"),
		k8s(kindTwice, "manifest", "--profile", "loads-twice.yaml").with("loads-twice.yaml").naming("loads-twice.yaml:3"),
		k8s(kindNumber, "run", "--outlier", "NaN%").naming("--outlier"),
		k8s(kindNumber, "run", "--ttl", "-1s").naming("--ttl"),
		k8s(kindNumber, "run", "--backoff-limit-per-index", "-1").naming("--backoff-limit-per-index"),
		k8s(kindNumber, "run", "--parallel", "-1").naming("--parallel"),
		k8s(kindNumber, "run", "--size", "Inf").naming("--size"),
		k8s(kindNumber, "manifest", "--pods", "NaN").naming("--pods"),
		k8s(kindNumber, "collect", "iomatrix-job", "--outlier", "Inf").naming("--outlier"),
		k8s(kindUnknownSub, "nosuch").naming(`"nosuch"`),
	}
}

// commandCases are profiles', cap show's and cleanup's, and the unknown
// subcommands of every group.
func commandCases() []refusal {
	return []refusal{
		on(needNothing, kindMultiDoc, "profiles", "profile-two-docs.yaml").with("profile-two-docs.yaml").naming("profile-two-docs.yaml"),
		on(needNothing, kindTwice, "profiles", "loads-twice.yaml").with("loads-twice.yaml").naming("loads-twice.yaml:3"),
		on(needNothing, kindAccepted, "profiles", "loads-nan.yaml").with("loads-nan.yaml").naming("loads-nan.yaml:3"),
		on(needNothing, kindNumber, "profiles", "--runtime", "Inf").naming("--runtime"),
		on(needNothing, kindNumber, "profiles", "--ramp", "-1s").naming("--ramp"),
		on(needHost, kindWrongStatus, "cap", "show", "--device", "/nonexistent").naming("--device"),
		on(needHost, kindUnknownSub, "cap", "show", "nosuch").naming("nosuch"),
		on(needHost, kindUnknownSub, "cap", "cleanup", "nosuch").naming("nosuch"),
		on(needNothing, kindUnknownSub, "nosuch").naming(`"nosuch"`),
		on(needNothing, kindUnknownSub, "cap", "nosuch").naming(`"nosuch"`),
		on(needNothing, kindUnknownSub, "iocost", "nosuch").naming(`"nosuch"`),
		on(needNothing, kindUnknownSub, "iocost", "modle", "iocost.json").with("iocost.json").naming(`"modle"`),
		on(needNothing, kindUnknownSub, "completion", "nosuch").naming(`"nosuch"`),
		on(needNothing, kindWrongStatus, "completion", "bash", "extra").naming(`"extra"`),
		on(needNothing, kindWrongStatus, "completion", "fish", "extra").naming(`"extra"`),
		on(needNothing, kindWrongStatus, "completion", "powershell", "extra").naming(`"extra"`),
		on(needNothing, kindWrongStatus, "completion", "zsh", "extra").naming(`"extra"`),
	}
}
