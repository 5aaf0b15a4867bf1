package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// isolate's phases on a file: the victim alone, beside the aggressor,
// beside the aggressor capped in its own cgroup, alone again (the
// baseline is the mean of both alone phases). The cap
// limits reads and writes, so a victim moved into the cgroup by mistake
// would fall to 500 IOPS; the capped aggressor does the cap's IOPS within
// 5 % (whole throttle slices); the ratios and the exit status follow from
// the figures; no cgroup is left. The target is on the test's own RAM disk,
// far faster than the cap: on the shared disk, a writeback storm beside the
// test left the capped aggressor 250 and 450 IOPS and the victim 700.
func TestIsolatePhases(t *testing.T) {
	c := capController(t)
	target := filepath.Join(testenv.RAMDir(t, 320<<20), "iso.dat")
	r := runCounted(t, c, "isolate", target, "--size", "256MiB", "--cap", "riops=500,wiops=500", "--runtime", "1s", "--ramp", "250ms", "--format", "json")
	var rep isolateReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if len(rep.Phases) != 4 || rep.Phases[0].Name != "alone" || rep.Phases[0].Aggressor != nil || rep.Phases[3].Aggressor != nil ||
		rep.Phases[1].Aggressor == nil || rep.Phases[2].Aggressor == nil {
		t.Fatalf("phases %+v", rep.Phases)
	}
	alone := (rep.Phases[0].Victim.Total.IOPS + rep.Phases[3].Victim.Total.IOPS) / 2
	capped := rep.Phases[2].Victim.Total.IOPS
	if capped < 1000 {
		t.Errorf("the victim did %.0f IOPS beside the capped aggressor: it was capped itself", capped)
	}
	agg := rep.Phases[2].Aggressor
	if math.Abs(agg.Total.IOPS/500-1) > 0.05 || rep.CapIOPS != 500 {
		t.Errorf("capped aggressor %.0f IOPS, cap model %.0f: want 500 within 5 %%", agg.Total.IOPS, rep.CapIOPS)
	}
	if rep.Phases[1].Aggressor.Total.IOPS <= 500 {
		t.Logf("note: the uncapped aggressor did only %.0f IOPS", rep.Phases[1].Aggressor.Total.IOPS)
	}
	if math.Abs(rep.Isolation-capped/alone) > 1e-9 || rep.Protected != (rep.Isolation >= 0.9) {
		t.Errorf("isolation %.4f (protected %v) from %.0f / %.0f", rep.Isolation, rep.Protected, capped, alone)
	}
	want := map[bool]int{true: exitOK, false: exitFailure}[rep.Protected]
	if rep.Inconclusive {
		want = exitInconclusive // somebody else's load on the test's own RAM disk: reported, never judged
		t.Logf("inconclusive: other load during %v", rep.OtherLoad)
	}
	if r.code != want {
		t.Errorf("exit %d for protected=%v, inconclusive=%v", r.code, rep.Protected, rep.Inconclusive)
	}
	t.Logf("alone %.0f, uncapped %.0f (aggressor %.0f), capped %.0f (aggressor %.0f): %s", alone, rep.Phases[1].Victim.Total.IOPS,
		rep.Phases[1].Aggressor.Total.IOPS, capped, agg.Total.IOPS, rep.Verdict)
}

// Bad input exits 2 with one line naming the flag, before any I/O.
func TestIsolateBadInput(t *testing.T) {
	target := filepath.Join(t.TempDir(), "iso.dat")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--cap"},
		{[]string{"--cgroup", "/sys/fs/cgroup/x"}, "--cgroup"},
		{[]string{"--cap", "wiops=5", "--runtime", "auto"}, "--runtime"},
		{[]string{"--cap", "wiops=5", "--victim", "randread:4k"}, "--victim"},
		{[]string{"--cap", "wiops=5", "--aggressor", "scribble:4k:1"}, "--aggressor"},
		{[]string{"--cap", "wiops=5", "--min-isolation", "0"}, "--min-isolation"},
		{[]string{"--cap", "wiops=5", "--format", "xml"}, "--format"},
	} {
		r := runInProcess(append([]string{"isolate", target}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("isolate %q: exit %d, stderr %q; want exit 2 and one line naming %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// The verdict is not given when another process loaded the device during
// a phase it rests on: the victim beside the capped aggressor at half its
// IOPS alone is NOT PROTECTED on a quiet device and INCONCLUSIVE beside a
// neighbour's writeback; the aggressor's own requests and bytes are not
// somebody else's; a neighbour during the uncapped phase only adds a note.
func TestIsolateOtherLoad(t *testing.T) {
	const mib = 1 << 20
	victim := func(iops float64, dev results.DevStats) results.Result {
		return results.Result{Name: "rand-4k-r100-qd1", DurationNS: 1e9, Pattern: results.Pattern{BlockSize: 4096},
			Total: results.Total{IOs: uint64(iops), Bytes: uint64(iops) * 4096, IOPS: iops}, Device: dev}
	}
	aggressor := func(iops float64) *results.Result {
		return &results.Result{Name: "rand-16k-r0-qd32", DurationNS: 1e9, Pattern: results.Pattern{BlockSize: 16 << 10},
			Total: results.Total{IOs: uint64(iops), Bytes: uint64(iops) * 16 << 10, IOPS: iops}}
	}
	quiet := func(v, a float64) results.DevStats { // the disk saw the victim's and the aggressor's requests only
		return results.DevStats{IOs: uint64(v + a), OtherIOs: uint64(a), Bytes: uint64(v)*4096 + uint64(a)*16<<10, OtherBytes: uint64(a) * 16 << 10}
	}
	storm := func(v, a float64) results.DevStats { // and 300 requests of somebody else's writeback, 280 MiB
		d := quiet(v, a)
		d.IOs, d.OtherIOs, d.Bytes, d.OtherBytes = d.IOs+300, d.OtherIOs+300, d.Bytes+280*mib, d.OtherBytes+280*mib
		return d
	}
	for _, tc := range []struct {
		name               string
		uncapped, capped   results.DevStats
		inconclusive, note bool
		word               string
	}{
		{"quiet", quiet(3000, 40000), quiet(6781, 500), false, false, "NOT PROTECTED"},
		{"a neighbour beside the capped aggressor", quiet(3000, 40000), storm(6781, 500), true, false, "INCONCLUSIVE (another process loaded the device during capped)"},
		{"a neighbour beside the uncapped aggressor", storm(3000, 40000), quiet(6781, 500), false, true, "NOT PROTECTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &isolateReport{MinIsolation: 0.9, Cap: &results.Cap{WriteIOPS: 500}, Target: results.TargetInfo{MaxSectorsKB: 1280, MaxSegments: 128},
				Phases: []isolatePhase{
					{Name: "alone", Victim: victim(13866, quiet(13866, 0))},
					{Name: "uncapped", Victim: victim(3000, tc.uncapped), Aggressor: aggressor(40000)},
					{Name: "capped", Victim: victim(6781, tc.capped), Aggressor: aggressor(500)},
					{Name: "alone again", Victim: victim(13866, quiet(13866, 0))},
				}}
			rep.judge(results.Pattern{BlockSize: 16 << 10, ReadPct: 0})
			noted := strings.Contains(strings.Join(rep.Notes, "\n"), "during the uncapped phase")
			if rep.Inconclusive != tc.inconclusive || noted != tc.note || !strings.HasPrefix(rep.Verdict, tc.word+":") {
				t.Errorf("inconclusive %v (%v), note %v, verdict %q; want %v, %v, %q", rep.Inconclusive, rep.OtherLoad, noted, rep.Verdict, tc.inconclusive, tc.note, tc.word)
			}
		})
	}
}
