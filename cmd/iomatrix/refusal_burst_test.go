package main

// burstCases are burst's: the pattern and the rule's numbers, a pattern
// it cannot find a burst with, and its files.
func burstCases() []refusal {
	burst := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"burst", "$DEV", "--max-runtime", "13s", "--probe", "0"}, args)...)
	}
	return []refusal{
		burst(kindWrongStatus, "--pattern", "randread:4k").naming("--pattern"),
		burst(kindWrongStatus, "--pattern", "randread:4k:32", "--hold", "1").naming("--hold"),
		burst(kindNumber, "--min-drop", "NaN").naming("--min-drop"),
		burst(kindNumber, "--min-drop", "-5%").naming("--min-drop"),
		burst(kindNumber, "--refill", "-1s").naming("--refill"),
		burst(kindNumber, "--max-runtime", "4s").naming("--max-runtime"),
		burst(kindWrongStatus, "--max-runtime", "12s").naming("--max-runtime", "--hold"),
		burst(kindWrongStatus, "--chart", "burst.png").naming("--chart"),
		burst(kindAccepted, "--pattern", "randwrite:4k:8").naming("--allow-destructive"),
		burst(kindOverFile, "-o", "burst.json").with("burst.json=results.json").naming("--out", "burst.json"),
		burst(kindOverFile, "--chart", "burst.svg").with("burst.svg=results.json").naming("--chart", "burst.svg"),
		burst(kindOverInput, "--chart", "b.svg", "-o", "b.svg", "--force").naming("--out", "b.svg"),
		on(needNothing, kindOverInput, "burst", "t.dat", "--size", "4MiB", "-o", "t.dat").naming("--out", "t.dat"),
	}
}

// sweepBurstCases are sweep --burst's: a file that is no burst, and one
// with --no-sentinels.
func sweepBurstCases() []refusal {
	sweep := func(kind string, args ...string) refusal {
		return on(needDevice, kind, join([]string{"sweep", "$DEV", "-o", "sweep.json"}, short, args)...)
	}
	return []refusal{
		sweep(kindWrongStatus, "--burst", "results.json").with("results.json").naming("--burst", "results.json"),
		sweep(kindWrongStatus, "--burst", "results.json", "--no-sentinels").with("results.json").naming("--burst", "--no-sentinels"),
		sweep(kindOverInput, "--burst", "b.json", "-o", "b.json").with("b.json=results.json").naming("--out", "b.json"),
	}
}
