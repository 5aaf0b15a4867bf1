package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/answers/crosscheck"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/fio"
	"github.com/iomatrix/iomatrix/results"
)

// A pattern SPEC's error names --pattern, or the flag isolate took it
// from, with the spec; it is bad input.
func TestParseCrossPattern(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"crosscheck", "--pattern", "randread:4k:0"}, `iomatrix: --pattern "randread:4k:0": QD: 0 is outside 1..256` + "\n"},
		{[]string{"crosscheck", "--pattern", "randread:4k:1", "--pattern", "randread:4096:1"},
			`iomatrix: --pattern "randread:4096:1": the same pattern as "randread:4k:1" (rand-4k-r100-qd1)` + "\n"},
		{[]string{"isolate", "--cap", "wiops=500", "--victim", "randread:4k"},
			`iomatrix: --victim "randread:4k": want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70` + "\n"},
	} {
		target := filepath.Join(t.TempDir(), "t.dat")
		r := runInProcess(append([]string{c.args[0], target}, c.args[1:]...)...)
		if r.code != exitUsage || r.stderr != c.says {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", c.args, r.code, r.stderr, c.says)
		}
	}
}

// --size is read in powers of two; a new file's default is crosscheck's
// (answers/crosscheck's TestPlanSize).
func TestCrossSizeBytes(t *testing.T) {
	for _, c := range []struct {
		size string
		want int64
	}{
		{"4GB", 4 << 30},
		{"4GiB", 4 << 30},
		{"64m", 64 << 20},
	} {
		if got, err := sizeFlag(c.size, true); err != nil || got != c.want {
			t.Errorf("--size %q: %d, %v; want %d", c.size, got, err, c.want)
		}
	}
	if _, err := sizeFlag("lots", true); err == nil || exitCode(err) != exitUsage || !strings.HasPrefix(err.Error(), "--size: ") {
		t.Errorf("--size lots: %v", err)
	}
}

// fioFixturePath is a recorded fio report of the fio package's tests.
func fioFixturePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "iotest", "fio", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixtureTotal is what the import code reads from a recorded fio report.
func fixtureTotal(t *testing.T, name string) results.Total {
	t.Helper()
	data, err := os.ReadFile(fioFixturePath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := fio.Import(name, bytes.NewReader(data))
	if err != nil || len(doc.Results) != 1 {
		t.Fatalf("%s: %v", name, err)
	}
	return doc.Results[0].Total
}

func TestCrosscheckBadInput(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	for _, c := range []struct {
		name  string
		args  []string
		names string
	}{
		{"pairs 0", []string{"--pairs", "0"}, "--pairs"},
		{"runtime 0", []string{"--runtime", "0"}, "--runtime"},
		{"ramp finer than fio's", []string{"--ramp", "1500us"}, "--ramp"},
		{"engine libaio", []string{"--engine", "libaio"}, "--engine"},
		{"engine auto", []string{"--engine", "auto"}, "--engine"},
		{"format", []string{"--format", "yaml"}, "--format"},
		{"pattern", []string{"--pattern", "randread:4k:0"}, `--pattern "randread:4k:0": QD`},
		{"size", []string{"--size", "lots"}, "--size"},
		{"fio-extra sets the extent", []string{"--fio-extra", "--size=4g"}, "--fio-extra"},
		{"keep without parent", []string{"--keep", filepath.Join(dir, "no", "such")}, "--keep"},
		{"too many args", []string{target}, "at most 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(append([]string{"crosscheck", target}, c.args...)...), c.names)
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("%s was created", target)
			}
		})
	}
	t.Run("no fio", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		r := runInProcess("crosscheck", target)
		checkRefused(t, r, "")
		if want := "iomatrix: fio not found on PATH: install it (e.g. apt-get install fio)\n"; r.stderr != want {
			t.Errorf("stderr %q, want %q", r.stderr, want)
		}
	})
	t.Run("writes to a file iomatrix did not create", func(t *testing.T) {
		t.Setenv("PATH", fakeFioDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
		theirs := filepath.Join(dir, "theirs.dat")
		if err := os.WriteFile(theirs, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		checkRefused(t, runInProcess("crosscheck", theirs, "--pattern", "randwrite:4k:1"), "--force")
	})
	// What crosscheck's package refuses in its own terms is said in the
	// flags': the fio options it sets, and a command fio refuses.
	t.Run("in the flags' terms", func(t *testing.T) {
		t.Setenv("PATH", fakeFioDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
		for _, c := range []struct {
			args   []string
			refuse string // FAKE_FIO_REFUSE
			says   string
		}{
			{[]string{"--fio-extra", "--size=4g"}, "", "--fio-extra: --size=4g is set by --size"},
			{[]string{"--fio-extra", "--nonvectored=1 --iodepth=4"}, "", "--fio-extra: --iodepth=4 is set by --pattern"},
			{[]string{"--fio-extra", "--hipri"}, "", "--fio-extra: --hipri is set by --poll"},
			{[]string{"--fio-extra", "--sqthread_poll=1"}, "", "--fio-extra: --sqthread_poll=1 is set by --sqpoll"},
			{[]string{"--fio-extra", "--directory=/"}, "", "--fio-extra: --directory=/ is set by TARGET"},
			{[]string{"--fio-extra", "--buffered=1"}, "", "--fio-extra: --buffered=1 is set by crosscheck (never)"},
			{[]string{"--fio-extra", "--randrepeat=1"}, "", "--fio-extra: --randrepeat=1 is set by crosscheck"},
			{[]string{"--fio-extra", "--nonvectored=1"}, "unrecognized option '--nonvectored=1'",
				"--fio-extra: fio refuses the command for --pattern randread:4k:1: fio: unrecognized option '--nonvectored=1'"},
			{nil, "no io_uring", "fio refuses the command for --pattern randread:4k:1: fio: no io_uring"},
		} {
			t.Setenv("FAKE_FIO_REFUSE", c.refuse)
			r := runInProcess(append([]string{"crosscheck", target, "--pattern", "randread:4k:1"}, c.args...)...)
			if want := "iomatrix: " + c.says + "\n"; r.code != exitUsage || r.stderr != want {
				t.Errorf("%q: exit %d, stderr %q; want 2, %q", c.args, r.code, r.stderr, want)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("%s was created", target)
			}
		}
		// --poll on a disk without poll queues: refused before fio or
		// iomatrix runs, nothing laid out.
		r := runInProcess("crosscheck", target, "--pattern", "randread:4k:1", "--poll")
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "iomatrix: --poll: ") || !strings.Contains(r.stderr, "io_poll") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("--poll: exit %d, stderr %q; want exit 2 and one line naming io_poll", r.code, r.stderr)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("%s was created", target)
		}
	})
}

// fakeFio is a stand-in for fio: it checks that it is given the target and
// the exact extent, records its command line and the number of iomatrix
// runs kept so far (to show the alternation), and prints a recorded fio
// report of the pattern asked for. With FAKE_FIO_REFUSE it refuses every
// command, saying why. With FAKE_FIO_BEAT it writes its
// process group to $FAKE_FIO_BEAT.pgid instead and waits for a child that
// rewrites $FAKE_FIO_BEAT every 50 ms: a fio with a job process to stop.
const fakeFio = `#!/bin/sh
case "$1" in --version) echo fio-3.33; exit 0 ;; esac
[ -n "$FAKE_FIO_REFUSE" ] && { echo "fio: $FAKE_FIO_REFUSE" >&2; exit 1; }
rw= parse=
for a in "$@"; do
	case "$a" in
	--parse-only) parse=1 ;;
	--rw=*) rw=${a#--rw=} ;;
	--filename=*) [ "${a#--filename=}" = "$FAKE_FIO_FILENAME" ] || { echo "fake fio: $a, want --filename=$FAKE_FIO_FILENAME" >&2; exit 3; } ;;
	--size=*) [ "${a#--size=}" = "$FAKE_FIO_SIZE" ] || { echo "fake fio: $a, want --size=$FAKE_FIO_SIZE" >&2; exit 3; } ;;
	esac
done
[ -n "$parse" ] && exit 0
echo "$(ls "$FAKE_FIO_KEEP" | grep -c 'iomatrix\.json$') $*" >> "$FAKE_FIO_LOG"
if [ -n "$FAKE_FIO_BEAT" ]; then
	echo $$ > "$FAKE_FIO_BEAT.pgid"
	(while :; do date +%s%N > "$FAKE_FIO_BEAT"; sleep 0.05; done) &
	wait
	exit 1
fi
case "$rw" in
randrw) cat "$FAKE_FIO_FIXTURES/randrw70.json" ;;
*) cat "$FAKE_FIO_FIXTURES/$rw.json" ;;
esac
`

// fakeFioDir returns a directory that holds fakeFio as "fio".
func fakeFioDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fio"), []byte(fakeFio), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeFioEnv is the environment of a crosscheck that finds fakeFio first
// on PATH, for target at size bytes, keeping its runs in keep.
func fakeFioEnv(t *testing.T, target string, size int64, keep string) (env []string, log string) {
	log = filepath.Join(t.TempDir(), "fio.log")
	return append(os.Environ(), "PATH="+fakeFioDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_FIO_FILENAME="+target, "FAKE_FIO_SIZE="+strconv.FormatInt(size, 10), "FAKE_FIO_KEEP="+keep,
		"FAKE_FIO_LOG="+log, "FAKE_FIO_FIXTURES="+filepath.Dir(fioFixturePath(t, "randread.json"))), log
}

// End to end with a stand-in fio: the real iomatrix runs, alternating with
// fio's recorded reports, and the ratios are those of the two.
func TestCrosscheckFakeFio(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	keep := filepath.Join(dir, "keep")
	env, log := fakeFioEnv(t, target, 64<<20, keep)
	cmd := iomatrixCmd(t, "crosscheck", target, "--size", "64MiB", "--pairs", "2", "--runtime", "200ms", "--ramp", "0s",
		"--pattern", "randread:4k:16", "--pattern", "randrw:8k:16:70", "--format", "json", "--keep", keep)
	cmd.Env = env
	r := runIomatrix(t, cmd)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc crosscheck.Document
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout: %v\n%s", err, r.stdout)
	}
	if !doc.Complete || doc.FailedRuns != 0 || doc.Target.SizeBytes != 64<<20 || doc.Fio.Version != "fio-3.33" || len(doc.Patterns) != 2 {
		t.Fatalf("document %+v", doc)
	}
	logged, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(strings.TrimSpace(string(logged)), "\n")
	if len(runs) != 4 {
		t.Fatalf("fio ran %d times, want 4:\n%s", len(runs), logged)
	}
	for i, res := range doc.Patterns {
		fixture := map[string]string{"rand-4k-r100-qd16": "randread.json", "rand-8k-r70-qd16": "randrw70.json"}[res.Name]
		fioTotal := fixtureTotal(t, fixture)
		var ratios []float64
		for k, p := range res.Pairs {
			// Before fio's k-th run of pattern i, the iomatrix runs of the
			// earlier pairs had ended, and no more; in an even pair
			// (k odd, from 0) iomatrix ran first.
			if want := map[bool]string{true: "fio", false: "iomatrix"}[k%2 == 0]; p.First != want {
				t.Errorf("pair %d ran %s first, want %s", k+1, p.First, want)
			}
			want := fmt.Sprintf("%d %s", i*2+k+k%2, strings.Join(res.FioCommand[1:], " "))
			if got := runs[i*2+k]; got != want {
				t.Errorf("fio run %d:\n got %s\nwant %s", i*2+k+1, got, want)
			}
			kept, err := results.ReadDocumentFile(filepath.Join(keep, p.Iomatrix.Raw))
			if err != nil {
				t.Fatal(err)
			}
			iops := kept.Results[0].Total.IOPS
			if *p.Fio.IOPS != fioTotal.IOPS || *p.Iomatrix.IOPS != iops || iops <= 0 || !closeTo(*p.Ratio, iops/fioTotal.IOPS) {
				t.Errorf("%s pair %d: fio %v iomatrix %v ratio %v; want %v, %v", res.Name, k+1, *p.Fio.IOPS, *p.Iomatrix.IOPS, *p.Ratio, fioTotal.IOPS, iops)
			}
			if p.Fio.CPUSecondsPerMio == nil || p.Iomatrix.CPUSecondsPerMio == nil || *p.Iomatrix.CPUSecondsPerMio <= 0 {
				t.Errorf("%s pair %d: no CPU figures: %+v", res.Name, k+1, p)
			}
			ratios = append(ratios, iops/fioTotal.IOPS)
		}
		if want := (ratios[0] + ratios[1]) / 2; !closeTo(*res.Median.Ratio, want) { // of two pairs
			t.Errorf("%s: median ratio %v, want %v", res.Name, *res.Median.Ratio, want)
		}
	}
	if !slices.Equal(doc.Fio.Tuned, crosscheck.FioTuned) {
		t.Errorf("fio's options %q, want the peak-IOPS ones %q", doc.Fio.Tuned, crosscheck.FioTuned)
	}
	for _, arg := range []string{"--filename=" + target, "--size=67108864", "--direct=1", "--ioengine=io_uring", "--iodepth=16", "--numjobs=1",
		"--bs=4096", "--runtime=200ms", "--ramp_time=0s", "--output-format=json", "--fixedbufs=1", "--registerfiles=1"} {
		if !slices.Contains(doc.Patterns[0].FioCommand, arg) {
			t.Errorf("fio command %q lacks %s", doc.Patterns[0].FioCommand, arg)
		}
	}
	if !slices.Contains(doc.Patterns[1].FioCommand, "--rwmixread=70") {
		t.Errorf("fio command %q lacks the mix", doc.Patterns[1].FioCommand)
	}

	// The table shows the same figures: the recorded fio IOPS, iomatrix's
	// own, and their ratio.
	keep = filepath.Join(dir, "keep-text")
	env, log = fakeFioEnv(t, target, 64<<20, keep)
	cmd = iomatrixCmd(t, "crosscheck", target, "--pairs", "2", "--runtime", "200ms", "--ramp", "0s", "--pattern", "randread:4k:16", "--keep", keep, "--fio-defaults")
	cmd.Env = env
	r = runIomatrix(t, cmd)
	if r.code != 0 {
		t.Fatalf("text: exit %d: %s", r.code, r.stderr)
	}
	fioIOPS := fixtureTotal(t, "randread.json").IOPS
	var ratios []float64
	for k := 1; k <= 2; k++ {
		kept, err := results.ReadDocumentFile(filepath.Join(keep, fmt.Sprintf("p01-rand-4k-r100-qd16.pair%d.iomatrix.json", k)))
		if err != nil {
			t.Fatal(err)
		}
		iops := kept.Results[0].Total.IOPS
		ratios = append(ratios, iops/fioIOPS)
		want := fmt.Sprintf("rand-4k-r100-qd16 %d %s %s %.3f", k, units.Thousands(fioIOPS, 0), units.Thousands(iops, 0), iops/fioIOPS)
		if !hasRowPrefix(r.stdout, want) {
			t.Errorf("table lacks a row %q:\n%s", want, r.stdout)
		}
	}
	if want := fmt.Sprintf("rand-4k-r100-qd16 median %s", units.Thousands(fioIOPS, 0)); !hasRowPrefix(r.stdout, want) ||
		!strings.Contains(r.stdout, fmt.Sprintf(" %.3f ", (ratios[0]+ratios[1])/2)) {
		t.Errorf("table lacks the median row %q, ratio %.3f:\n%s", want, (ratios[0]+ratios[1])/2, r.stdout)
	}
	if !strings.Contains(r.stdout, "64MiB = 67,108,864 bytes for both tools") {
		t.Errorf("header does not give the extent:\n%s", r.stdout)
	}
	// --fio-defaults: the header says so, and fio got no tuning.
	if !strings.Contains(r.stdout, "--randrepeat=0 --norandommap (fio's defaults, --fio-defaults)") {
		t.Errorf("header does not name fio's options:\n%s", r.stdout)
	}
	if logged, err := os.ReadFile(log); err != nil || strings.Contains(string(logged), "fixedbufs") || !strings.Contains(string(logged), "--norandommap") {
		t.Errorf("--fio-defaults: fio ran %s (%v)", logged, err)
	}
}

func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }

// hasRowPrefix reports whether a line of table starts with the fields of
// want, whatever the spacing.
func hasRowPrefix(table, want string) bool {
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(l), " ")+" ", want+" ") {
			return true
		}
	}
	return false
}

// SIGINT stops a running fio and everything it started, and crosscheck
// exits 130.
func TestCrosscheckInterruptStopsFio(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	env, _ := fakeFioEnv(t, target, 16<<20, dir)
	beat := filepath.Join(dir, "beat")
	cmd := iomatrixCmd(t, "crosscheck", target, "--size", "16MiB", "--pattern", "randread:4k:16", "--runtime", "30s")
	cmd.Env = append(env, "FAKE_FIO_BEAT="+beat)
	var errb strings.Builder
	cmd.Stderr = &errb
	testenv.Must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // the exit status is read from ProcessState
	// The fake fio writes its process group, then starts its job.
	pgid := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !testenv.Poll(ctx, func() bool {
		b, _ := os.ReadFile(beat + ".pgid")
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		_, err := os.Stat(beat)
		return pgid > 1 && err == nil
	}) {
		_ = cmd.Process.Kill()
		t.Fatalf("fio never started: %s", errb.String())
	}
	if live := liveInGroup(pgid); len(live) < 2 {
		t.Errorf("fio's process group %d: %v running, want fio and its job", pgid, live)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no exit 15 s after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130; stderr %q", code, errb.String())
	}
	// Killed processes take a moment to exit: fio's group must empty.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !testenv.Poll(ctx, func() bool { return len(liveInGroup(pgid)) == 0 }) {
		t.Errorf("fio's job processes %v outlived crosscheck", liveInGroup(pgid))
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// One real comparison, when fio is installed (CI installs it).
func TestCrosscheckRealFio(t *testing.T) {
	testenv.Root(t)
	testenv.Command(t, "fio")
	// A RAM-backed loop device: the shared disk's other users once cut
	// one tool's 300 ms run to a twentieth of the other's.
	target := testenv.RAMDisk(t, 64<<20)
	// A ramp at QD8: fio then counts the bytes of I/Os in flight at the
	// ramp's end but not the I/Os, which the import must accept.
	r := runIomatrix(t, iomatrixCmd(t, "crosscheck", target, "--pairs", "1", "--runtime", "300ms", "--ramp", "200ms",
		"--pattern", "randread:4k:8", "--format", "json"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc crosscheck.Document
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout: %v\n%s", err, r.stdout)
	}
	if !doc.Complete || doc.FailedRuns != 0 || len(doc.Patterns) != 1 || len(doc.Patterns[0].Pairs) != 1 {
		t.Fatalf("document %+v", doc)
	}
	p := doc.Patterns[0].Pairs[0]
	t.Logf("fio %.0f IOPS, %.3f cpu-s/Mio; iomatrix %.0f IOPS, %.3f cpu-s/Mio; ratio %.3f",
		*p.Fio.IOPS, *p.Fio.CPUSecondsPerMio, *p.Iomatrix.IOPS, *p.Iomatrix.CPUSecondsPerMio, *p.Ratio)
	// Not a speed test: a ratio this far off means the tools did not
	// measure the same thing (units, extent, pattern).
	if *p.Ratio < 0.1 || *p.Ratio > 10 || p.Fio.IOs == 0 || *p.Fio.CPUSecondsPerMio <= 0 || *p.Iomatrix.CPUSecondsPerMio <= 0 {
		t.Errorf("pair %+v", p)
	}
	if !slices.Contains(doc.Patterns[0].FioCommand, "--size=67108864") || doc.Target.SizeBytes != 64<<20 {
		t.Errorf("extent: fio %q, target %d bytes", doc.Patterns[0].FioCommand, doc.Target.SizeBytes)
	}
}
