package main

// replayCases are replay's: a trace that cannot be read, a choice it
// needs, the flags' numbers, and its files.
func replayCases() []refusal {
	replay := func(kind string, args ...string) refusal {
		return on(needDevice, kind, append([]string{"replay", "replay.iolog", "$DEV", "--allow-destructive"}, args...)...).with("replay.iolog")
	}
	return []refusal{
		on(needNothing, kindWrongStatus, "replay", "replay-bad.iolog", "t.dat").with("replay-bad.iolog").naming("replay-bad.iolog:3"),
		on(needDevice, kindWrongStatus, "replay", "replay-two.iolog", "$DEV").with("replay-two.iolog").naming("--device"),
		on(needDevice, kindAccepted, "replay", "replay.iolog", "$DEV").with("replay.iolog").naming("--allow-destructive"),
		replay(kindNumber, "--speed", "NaN").naming("--speed"),
		replay(kindNumber, "--speed", "-1").naming("--speed"),
		replay(kindNumber, "--qd", "0").naming("--qd"),
		replay(kindOverInput, "-o", "replay.iolog").naming("--out"),
		on(needNothing, kindOverInput, "replay", "replay.iolog", "replay.iolog").with("replay.iolog").naming("TARGET"),
	}
}
