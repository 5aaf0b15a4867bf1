package crosscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/fio"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

func spec(t *testing.T, s string) pattern.Spec {
	t.Helper()
	ps, err := pattern.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestParsePatterns(t *testing.T) {
	pats, err := ParsePatterns(nil)
	if err != nil || len(pats) != 4 || pats[3].Spec != "randrw:16k:8:50" || pats[3].Pattern.ReadPct != 50 {
		t.Errorf("default set %+v, %v", pats, err)
	}
	_, err = ParsePatterns([]string{"randread:4k:1", "randread:4096:1"})
	var se *pattern.SpecError
	if !errors.As(err, &se) || err.Error() != `"randread:4096:1": the same pattern as "randread:4k:1" (rand-4k-r100-qd1)` {
		t.Errorf("the same pattern twice: %v", err)
	}
	if _, err := ParsePatterns([]string{"randread:4k:1", "randread:4k:0"}); !errors.As(err, &se) || se.Spec != "randread:4k:0" {
		t.Errorf("a bad pattern: %v", err)
	}
}

// okOptions are options that pass Validate, for tests to spoil one at a
// time.
func okOptions(t *testing.T) Options {
	return Options{Fio: "fio", Iomatrix: "iomatrix", Target: "/t", Size: 1 << 20, Engine: iotest.EngineUring,
		Runtime: time.Second, Patterns: []pattern.Spec{spec(t, "randread:4k:16")}, Pairs: 1}
}

func TestValidate(t *testing.T) {
	if err := okOptions(t).Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		spoil  func(*Options)
		option string // of the fault.InputError; "" for a FieldError
		says   string
	}{
		{"pairs 0", func(o *Options) { o.Pairs = 0 }, "pairs", "0 must be at least 1"},
		{"runtime 0", func(o *Options) { o.Runtime = 0 }, "", "runtime: 0s must be positive"},
		{"ramp finer than fio's", func(o *Options) { o.Ramp = 1500 * time.Microsecond }, "ramp",
			"1.5ms is not a whole number of milliseconds, the finest time fio takes"},
		{"runtime finer than fio's", func(o *Options) { o.Runtime = time.Second + 1 }, "runtime", "1.000000001s is not a whole number of milliseconds, the finest time fio takes"},
		{"engine auto", func(o *Options) { o.Engine = iotest.EngineAuto }, "engine", `"auto" is not one of uring, psync`},
		{"no pattern", func(o *Options) { o.Patterns = nil }, "pattern", "no pattern to compare"},
		{"a sync fio cannot issue", func(o *Options) { o.Patterns = []pattern.Spec{spec(t, "write:4k:1 sync=fdatasync:1.5:after")} }, "pattern",
			`write:4k:1 sync=fdatasync:1.5:after: sync=fdatasync:1.5:after syncs after a number of writes that is not whole, and fio's fdatasync=N and fsync=N take a whole N: the two tools would differ`},
		{"not a fio option", func(o *Options) { o.FioExtra = []string{"--nonvectored=1", "jobfile.fio"} }, "fio-extra", `"jobfile.fio" is not a fio option (--name or --name=value)`},
		{"a bare --", func(o *Options) { o.FioExtra = []string{"--"} }, "fio-extra", `"--" is not a fio option (--name or --name=value)`},
		{"fio's size", func(o *Options) { o.FioExtra = []string{"--size=4g"} }, "fio-extra", "--size=4g is set by the size option"},
		{"fio's direct", func(o *Options) { o.FioExtra = []string{"--direct=0"} }, "fio-extra", "--direct=0 is set by crosscheck (always 1)"},
		{"fio's name", func(o *Options) { o.FioExtra = []string{"--name=x"} }, "fio-extra", "--name=x is set by crosscheck"},
		{"keep without parent", func(o *Options) { o.Keep = filepath.Join(dir, "no", "such") }, "keep",
			fmt.Sprintf("neither %s nor its parent %s exists", filepath.Join(dir, "no", "such"), filepath.Join(dir, "no"))},
		{"keep a file", func(o *Options) { o.Keep = file }, "keep", file + " is not a directory"},
	} {
		o := okOptions(t)
		c.spoil(&o)
		err := o.Validate()
		var ie *fault.InputError
		var fe *pattern.FieldError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.option == "" && !errors.As(err, &fe), c.option != "" && (!errors.As(err, &ie) || ie.Option != c.option):
			t.Errorf("%s: %T %v, want bad input for %q", c.name, err, err, c.option)
		case c.option != "" && ie.Err.Error() != c.says, c.option == "" && err.Error() != c.says:
			t.Errorf("%s: %q, want %q", c.name, err, c.says)
		}
	}
	o := okOptions(t)
	o.FioExtra = []string{"--filename=/dev/sdb"}
	var ce *ControlledError
	if err := o.Validate(); !errors.As(err, &ce) || *ce != (ControlledError{Arg: "--filename=/dev/sdb", Option: "target"}) {
		t.Errorf("--filename: %v", err)
	}
	o.FioExtra = []string{"  --registerfiles=1", "--nonvectored=1"}
	if err := o.Validate(); err == nil {
		t.Error("an option with spaces before it accepted") // the caller splits on whitespace
	}
	o.FioExtra = []string{"--registerfiles=1", "--fixedbufs=1", "--nonvectored=1"}
	if err := o.Validate(); err != nil {
		t.Errorf("fio options that crosscheck leaves alone: %v", err)
	}
}

// fakeFio stands in for fio when New checks it: its version, and a
// refusal of the commands that hold refuse.
func fakeFio(refuse string) func(context.Context, []string) Process {
	return func(_ context.Context, argv []string) Process {
		if argv[1] == "--version" {
			return Process{Stdout: []byte("fio-3.33\n")}
		}
		if refuse != "" && slices.Contains(argv, refuse) {
			return Process{Stderr: []byte("fio: unrecognized option '" + refuse + "'\n"), Err: errors.New("exit status 1")}
		}
		return Process{}
	}
}

// An NVMe generic device is run by fio's io_uring_cmd engine with
// --cmd_type=nvme, and no --direct=1 (no page cache sits before it, and
// the kernel refuses O_DIRECT on a character device); of fio's peak-IOPS
// options only the registered file, as iomatrix registers no buffers for
// its commands. iomatrix's command is the same as for a block device.
func TestArgvPassthrough(t *testing.T) {
	randread := spec(t, "randread:4k:1")
	o := okOptions(t)
	o.Target, o.Size, o.Runtime, o.Ramp, o.Passthrough, o.AllowDestructive, o.Run = "/dev/ng0n1", 1<<30, 10*time.Second, 2*time.Second, true, true, fakeFio("")
	o.Fio, o.Iomatrix = "/usr/bin/fio", "/bin/iomatrix"
	o.Patterns = []pattern.Spec{randread}
	c, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := "/usr/bin/fio --name=rand-4k-r100-qd1 --filename=/dev/ng0n1 --size=1073741824 --ioengine=io_uring_cmd --cmd_type=nvme " +
		"--rw=randread --bs=4096 --iodepth=1 --numjobs=1 --group_reporting --time_based --runtime=10s --ramp_time=2s " +
		"--randrepeat=0 --norandommap --output-format=json --registerfiles=1"
	if got := strings.Join(c.fioArgv(randread), " "); got != want {
		t.Errorf("fio:\n got %s\nwant %s", got, want)
	}
	wantIom := "/bin/iomatrix run /dev/ng0n1 --rw randread --bs 4096 --qd 1 --jobs 1 --runtime 10s --ramp 2s --engine uring --format json " +
		"--size 1073741824 --allow-destructive"
	if got := strings.Join(c.iomatrixArgv(randread), " "); got != wantIom {
		t.Errorf("iomatrix:\n got %s\nwant %s", got, wantIom)
	}
	if d := c.Document(); d.Fio.IOEngine != "io_uring_cmd" || !slices.Equal(d.Fio.Tuned, FioTunedPassthrough) {
		t.Errorf("document: fio %+v", d.Fio)
	}
	// fio's options stay crosscheck's, the engine's too.
	o.FioExtra = []string{"--cmd_type=nvme"}
	if _, err := New(context.Background(), o); !errors.As(err, new(*ControlledError)) {
		t.Errorf("--fio-extra --cmd_type=nvme: %v", err)
	}
	o.FioExtra, o.Engine = nil, iotest.EnginePsync
	if _, err := New(context.Background(), o); !errors.As(err, new(*fault.InputError)) || !strings.Contains(err.Error(), "io_uring only") {
		t.Errorf("psync on a passthrough device: %v", err)
	}
	// The header names fio's engine and its command type.
	var b strings.Builder
	o.Engine = iotest.EngineUring
	c, _ = New(context.Background(), o)
	c.Text(&b).Start(c.Document())
	if !strings.Contains(b.String(), "--ioengine=io_uring_cmd --cmd_type=nvme --iodepth=QD") {
		t.Errorf("header:\n%s", b.String())
	}
}

func TestNew(t *testing.T) {
	for _, c := range []struct {
		defaults bool
		engine   string
		want     []string
	}{
		{false, iotest.EngineUring, []string{"--fixedbufs=1", "--registerfiles=1"}},
		{true, iotest.EngineUring, nil},
		{false, iotest.EnginePsync, nil},
	} {
		o := okOptions(t)
		o.FioDefaults, o.Engine, o.Run = c.defaults, c.engine, fakeFio("")
		cc, err := New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if d := cc.Document(); !slices.Equal(cc.fioTuned, c.want) || d.Fio.Version != "fio-3.33" || !slices.Equal(d.Fio.Tuned, c.want) {
			t.Errorf("defaults %v, engine %s: tuned %q (document %+v), want %q", c.defaults, c.engine, cc.fioTuned, d.Fio, c.want)
		}
	}

	o := okOptions(t)
	o.FioExtra, o.Run = []string{"--nosuch=1"}, fakeFio("--nosuch=1")
	_, err := New(context.Background(), o)
	var re *RefusedError
	var ie *fault.InputError
	if !errors.As(err, &re) || *re != (RefusedError{Spec: "randread:4k:16", Extra: true, Why: "fio: unrecognized option '--nosuch=1'"}) ||
		!errors.As(err, &ie) || ie.Option != "fio-extra" {
		t.Errorf("fio refuses: %v", err)
	}
	o.Run = func(context.Context, []string) Process { return Process{Err: errors.New("exit status 127")} }
	if _, err := New(context.Background(), o); !errors.As(err, new(*fault.InputError)) || err.Error() != "fio --version: exit status 127" {
		t.Errorf("fio does not run: %v", err)
	}
}

func TestArgv(t *testing.T) {
	randrw, randread := spec(t, "randrw:16k:8:70:2"), spec(t, "randread:4k:32")
	c := &Comparison{o: Options{
		Fio: "/usr/bin/fio", Iomatrix: "/bin/iomatrix", Target: "/mnt/a:b/iomatrix.dat", Size: 4 << 30,
		Engine: iotest.EngineUring, Runtime: 10 * time.Second, Ramp: 1500 * time.Millisecond, FioExtra: []string{"--nonvectored=1"},
	}, fioTuned: FioTuned}
	check := func(what string, argv []string, want string) {
		t.Helper()
		if got := strings.Join(argv, " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	check("uring fio", c.fioArgv(randrw), "/usr/bin/fio --name=rand-16k-r70-qd8-j2 --filename=/mnt/a\\:b/iomatrix.dat --size=4294967296 "+
		"--direct=1 --ioengine=io_uring --rw=randrw --bs=16384 --rwmixread=70 --iodepth=8 --numjobs=2 --group_reporting --time_based "+
		"--runtime=10s --ramp_time=1500ms --randrepeat=0 --norandommap --output-format=json --fixedbufs=1 --registerfiles=1 --nonvectored=1")
	check("uring iomatrix", c.iomatrixArgv(randrw), "/bin/iomatrix run /mnt/a:b/iomatrix.dat --rw randrw --bs 16384 --rwmix 70 "+
		"--qd 8 --jobs 2 --runtime 10s --ramp 1.5s --engine uring --format json --size 4294967296")

	// psync: one I/O in flight per fio job, so QD becomes jobs; iomatrix
	// keeps QD and JOBS. A file read in place gets no --size from
	// iomatrix (its size is the file's), only from fio.
	c.o.Engine, c.o.ReadInPlace, c.o.AllowDestructive, c.fioTuned, c.o.FioExtra, c.o.Ramp = iotest.EnginePsync, true, true, nil, nil, 0
	c.o.Target = "/dev/vdb"
	check("psync fio", c.fioArgv(randrw), "/usr/bin/fio --name=rand-16k-r70-qd8-j2 --filename=/dev/vdb --size=4294967296 "+
		"--direct=1 --ioengine=psync --rw=randrw --bs=16384 --rwmixread=70 --iodepth=1 --numjobs=16 --group_reporting --time_based "+
		"--runtime=10s --ramp_time=0s --randrepeat=0 --norandommap --output-format=json")
	check("psync iomatrix", c.iomatrixArgv(randrw), "/bin/iomatrix run /dev/vdb --rw randrw --bs 16384 --rwmix 70 "+
		"--qd 8 --jobs 2 --runtime 10s --ramp 0s --engine psync --format json --allow-destructive")
	// Data content: fio's options, iomatrix's flags.
	content := spec(t, "write:128k:8 buffer_compress_percentage=50 dedupe_percentage=20")
	check("content fio", c.fioArgv(content), "/usr/bin/fio --name=seq-write-128k-qd8-c50-d20 --filename=/dev/vdb --size=4294967296 "+
		"--direct=1 --ioengine=psync --rw=write --bs=131072 --buffer_compress_percentage=50 --dedupe_percentage=20 --iodepth=1 --numjobs=8 "+
		"--group_reporting --time_based --runtime=10s --ramp_time=0s --randrepeat=0 --norandommap --output-format=json")
	check("content iomatrix", c.iomatrixArgv(content), "/bin/iomatrix run /dev/vdb --rw write --bs 131072 --compress 50 --dedupe 20 "+
		"--qd 8 --jobs 1 --runtime 10s --ramp 0s --engine psync --format json --allow-destructive")
	for _, argv := range [][]string{c.fioArgv(randread), c.iomatrixArgv(randread)} {
		if strings.Contains(strings.Join(argv, " "), "rwmix") {
			t.Errorf("randread given a mix: %q", argv)
		}
	}
}

// Durable writes carry over as fio's own options: O_DSYNC for dsync, a
// sync every N writes for fdatasync:N and fsync:N.
func TestArgvSync(t *testing.T) {
	c := &Comparison{o: Options{Fio: "fio", Iomatrix: "iomatrix", Target: "/tmp/f", Size: 1 << 30, Engine: iotest.EngineUring, Runtime: time.Second}}
	for sync, want := range map[string]string{"sync=dsync": "--sync=dsync", "sync=fdatasync:1": "--fdatasync=1", "sync=fsync:8": "--fsync=8", "sync=fdatasync:2:after": "--fdatasync=2"} {
		ps := spec(t, "write:4k:1 "+sync)
		fio, iom := strings.Join(c.fioArgv(ps), " "), strings.Join(c.iomatrixArgv(ps), " ")
		if !strings.Contains(fio, " "+want+" ") {
			t.Errorf("%s: fio %s, want %s", sync, fio, want)
		}
		if !strings.Contains(iom, " --sync "+ps.Pattern.Sync+" ") {
			t.Errorf("%s: iomatrix %s", sync, iom)
		}
	}
}

// A linked sync has no fio counterpart on the ring, and crosscheck says
// so once per pattern; the :after form and psync are fio's way.
func TestNoticeLinkedSyncs(t *testing.T) {
	for _, c := range []struct {
		engine, sync string
		want         bool
	}{
		{iotest.EngineUring, "fdatasync:1", true}, {iotest.EngineUring, "fsync:4", true},
		{iotest.EngineUring, "fdatasync:1:after", false}, {iotest.EngineUring, "dsync", false},
		{iotest.EnginePsync, "fdatasync:1", false},
	} {
		var notices []string
		cmp := &Comparison{o: Options{Engine: c.engine, Patterns: []pattern.Spec{spec(t, "write:4k:1 sync="+c.sync)},
			Notice: func(s string) { notices = append(notices, s) }}}
		cmp.noticeLinkedSyncs()
		if got := len(notices) == 1 && strings.Contains(notices[0], "sync="+c.sync+":after"); got != c.want || !c.want && len(notices) > 0 {
			t.Errorf("%s %s: notices %q", c.engine, c.sync, notices)
		}
	}
}

// fio's sync is issued after its write: its report of a linked sync's
// pattern reads back as the :after form, and is taken as what fio was
// asked (the nearest it has); any other difference is still refused.
func TestFioFiguresOfALinkedSync(t *testing.T) {
	data, _ := fioFixture(t, "seqwrite.json")
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	opts := doc["jobs"].([]any)[0].(map[string]any)["job options"].(map[string]any)
	opts["iodepth"], opts["fdatasync"] = "1", "2"
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		engine, pattern string
		ok              bool
	}{
		{iotest.EngineUring, "write:1m:1 sync=fdatasync:2", true},
		{iotest.EngineUring, "write:1m:1 sync=fdatasync:2:after", true},
		{iotest.EnginePsync, "write:1m:1 sync=fdatasync:2", true},
		{iotest.EngineUring, "write:1m:1 sync=fsync:2", false},
		{iotest.EngineUring, "write:1m:1 sync=fdatasync:3:after", false},
	} {
		cmp := &Comparison{o: Options{Engine: c.engine}}
		_, err := cmp.fioFigures(spec(t, c.pattern))(out)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v, want ok %v", c.engine, c.pattern, err, c.ok)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want *float64
	}{
		{nil, nil},
		{[]float64{3}, ptr(3)},
		{[]float64{3, 1, 2}, ptr(2)},
		{[]float64{4, 1, 3, 2}, ptr(2.5)},
	} {
		got := median(c.in)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// recorded is what a run of one tool reported: its IOPS and I/Os and the
// CPU its process took, or the reason it failed.
type recorded struct {
	iops float64
	ios  uint64
	cpu  time.Duration
	err  string
}

func (r recorded) run() ToolRun {
	run := ToolRun{CPUSeconds: r.cpu.Seconds(), Error: r.err}
	if r.err == "" {
		run.measured(results.Total{IOPS: r.iops, IOs: r.ios}, r.cpu)
	}
	return run
}

// sameFigure reports whether got is want, both n/a (nil) or both numbers
// within rounding.
func sameFigure(got, want *float64) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return closeTo(*got, *want)
}

func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }

func show(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprint(*v)
}

var failed = recorded{cpu: time.Second, err: "exit status 1: fio: something broke"}

// summaryCases are pairs of recorded runs with the figures the document
// must hold: each pair's ratio and CPU per million I/Os, and the medians,
// a failed run's figures n/a and left out of every median.
var summaryCases = []struct {
	name              string
	fio, iomatrix     []recorded
	ratios            []*float64
	fioCPU, iomCPU    []*float64 // s per million I/Os, per pair
	median            Medians
	interval          string // the line under the median row ("" for none)
	failedRuns        int
	fioIOPSText       []string // the table's fio IOPS column, per pair
	ratioText, cpuTxt []string // its ratio and iomatrix cpu-s/Mio columns
}{
	{
		name:     "three good pairs",
		fio:      []recorded{{iops: 40000, ios: 400000, cpu: 2 * time.Second}, {iops: 50000, ios: 500000, cpu: 2 * time.Second}, {iops: 45000, ios: 450000, cpu: 3 * time.Second}},
		iomatrix: []recorded{{iops: 30000, ios: 300000, cpu: time.Second}, {iops: 55000, ios: 550000, cpu: 1100 * time.Millisecond}, {iops: 45000, ios: 450000, cpu: 900 * time.Millisecond}},
		ratios:   []*float64{ptr(0.75), ptr(1.1), ptr(1)},
		fioCPU:   []*float64{ptr(5), ptr(4), ptr(3 / 0.45)},
		iomCPU:   []*float64{ptr(1 / 0.3), ptr(2), ptr(2)},
		median: Medians{FioIOPS: ptr(45000), IomatrixIOPS: ptr(45000), Ratio: ptr(1),
			FioCPUSecondsPerMio: ptr(5), IomatrixCPUSecondsPerMio: ptr(2), RatioInterval: &Interval{0.75, 1.1, 0.75, 3}},
		interval:    "the median ratio lies in 0.750-1.100 with 75 % confidence (3 pairs, by rank): too wide to tell a 5 % difference between the tools; more --pairs narrow it",
		fioIOPSText: []string{"40,000", "50,000", "45,000"}, ratioText: []string{"0.750", "1.100", "1.000"}, cpuTxt: []string{"3.333", "2.000", "2.000"},
	},
	{
		// The failed fio run leaves its pair without a ratio; the
		// medians are of the two pairs that have one (an even count:
		// the mean of the middle two).
		name:     "a failed fio run",
		fio:      []recorded{{iops: 40000, ios: 400000, cpu: 2 * time.Second}, failed, {iops: 60000, ios: 600000, cpu: 3 * time.Second}},
		iomatrix: []recorded{{iops: 44000, ios: 440000, cpu: time.Second}, {iops: 50000, ios: 500000, cpu: time.Second}, {iops: 54000, ios: 540000, cpu: time.Second}},
		ratios:   []*float64{ptr(1.1), nil, ptr(0.9)},
		fioCPU:   []*float64{ptr(5), nil, ptr(5)},
		iomCPU:   []*float64{ptr(1 / 0.44), ptr(2), ptr(1 / 0.54)},
		median: Medians{FioIOPS: ptr(50000), IomatrixIOPS: ptr(50000), Ratio: ptr(1),
			FioCPUSecondsPerMio: ptr(5), IomatrixCPUSecondsPerMio: ptr(2), RatioInterval: &Interval{0.9, 1.1, 0.5, 2}},
		// Of the two ratios there are, not of three pairs.
		interval:    "the median ratio lies in 0.900-1.100 with 50 % confidence (2 pairs, by rank): too wide to tell a 5 % difference between the tools; more --pairs narrow it",
		failedRuns:  1,
		fioIOPSText: []string{"40,000", "n/a", "60,000"}, ratioText: []string{"1.100", "n/a", "0.900"}, cpuTxt: []string{"2.273", "2.000", "1.852"},
	},
	{
		// A run that did no I/O has IOPS (0) but no CPU per I/O, and
		// fio's 0 IOPS makes no ratio; with every run of a tool failed,
		// its medians are n/a.
		name:     "no I/O, and every iomatrix run failed",
		fio:      []recorded{{iops: 0, ios: 0, cpu: time.Second}, {iops: 1000, ios: 1000, cpu: time.Second}},
		iomatrix: []recorded{failed, failed},
		ratios:   []*float64{nil, nil},
		fioCPU:   []*float64{nil, ptr(1000)},
		iomCPU:   []*float64{nil, nil},
		median:   Medians{FioIOPS: ptr(500), FioCPUSecondsPerMio: ptr(1000)},
		// Two failed runs.
		failedRuns:  2,
		fioIOPSText: []string{"0", "1,000"}, ratioText: []string{"n/a", "n/a"}, cpuTxt: []string{"n/a", "n/a"},
	},
}

// summaryDocument is the document of one summary case, built as compare
// builds it.
func summaryDocument(name string, fioRuns, iomRuns []recorded) *Document {
	d := &Document{Pairs: len(fioRuns), Target: results.TargetInfo{Path: "/t", Kind: "file", SizeBytes: 1 << 30},
		Fio:      FioInfo{Version: "fio-3.33", IOEngine: "io_uring", Tuned: FioTuned, Extra: []string{}},
		Iomatrix: IomatrixInfo{Version: "0.1.0", Engine: iotest.EngineUring}, RuntimeNS: int64(10 * time.Second), RampNS: int64(time.Second)}
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1}
	res := Result{Spec: name, Name: p.Name(), Pattern: p}
	for k := range fioRuns {
		pair := Pair{First: "fio", Fio: fioRuns[k].run(), Iomatrix: iomRuns[k].run()}
		if k%2 == 1 {
			pair.First = "iomatrix"
		}
		pair.Ratio = ratio(pair.Fio, pair.Iomatrix)
		res.Pairs = append(res.Pairs, pair)
	}
	res.Median = medians(res.Pairs)
	d.Patterns = append(d.Patterns, res)
	d.finish(true)
	return d
}

// The summary from recorded run figures: each pair's ratio and CPU per
// million I/Os, the medians, and n/a for what a failed run could not give.
func TestSummary(t *testing.T) {
	for _, c := range summaryCases {
		d := summaryDocument(c.name, c.fio, c.iomatrix)
		res := d.Patterns[0]
		for k, p := range res.Pairs {
			if !sameFigure(p.Ratio, c.ratios[k]) || !sameFigure(p.Fio.CPUSecondsPerMio, c.fioCPU[k]) || !sameFigure(p.Iomatrix.CPUSecondsPerMio, c.iomCPU[k]) {
				t.Errorf("%s: pair %d: ratio %s, cpu-s/Mio %s and %s; want %s, %s and %s", c.name, k+1, show(p.Ratio),
					show(p.Fio.CPUSecondsPerMio), show(p.Iomatrix.CPUSecondsPerMio), show(c.ratios[k]), show(c.fioCPU[k]), show(c.iomCPU[k]))
			}
		}
		m, w := res.Median, c.median
		for _, f := range []struct {
			what      string
			got, want *float64
		}{{"fio IOPS", m.FioIOPS, w.FioIOPS}, {"iomatrix IOPS", m.IomatrixIOPS, w.IomatrixIOPS}, {"ratio", m.Ratio, w.Ratio},
			{"fio cpu-s/Mio", m.FioCPUSecondsPerMio, w.FioCPUSecondsPerMio}, {"iomatrix cpu-s/Mio", m.IomatrixCPUSecondsPerMio, w.IomatrixCPUSecondsPerMio}} {
			if !sameFigure(f.got, f.want) {
				t.Errorf("%s: median %s %s, want %s", c.name, f.what, show(f.got), show(f.want))
			}
		}
		if (m.RatioInterval == nil) != (w.RatioInterval == nil) || m.RatioInterval != nil && *m.RatioInterval != *w.RatioInterval {
			t.Errorf("%s: ratio interval %+v, want %+v", c.name, m.RatioInterval, w.RatioInterval)
		}
		if d.FailedRuns != c.failedRuns || !d.Complete {
			t.Errorf("%s: %d failed runs, complete %v; want %d", c.name, d.FailedRuns, d.Complete, c.failedRuns)
		}
		// A figure that could not be had is null in the JSON, not 0.
		var b bytes.Buffer
		if err := d.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var back Document
		if err := json.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if got := back.Patterns[0].Median.RatioInterval; (got == nil) != (w.RatioInterval == nil) || got != nil && *got != *w.RatioInterval {
			t.Errorf("%s: ratio interval read back %+v, want %+v", c.name, got, w.RatioInterval)
		}
		for k, p := range back.Patterns[0].Pairs {
			if !sameFigure(p.Ratio, c.ratios[k]) || (p.Fio.Error != "") != (c.fio[k].err != "") {
				t.Errorf("%s: pair %d read back %+v", c.name, k+1, p)
			}
		}
	}
}

// The table: a header, a row per pair and a median row, n/a where a
// figure could not be had.
func TestText(t *testing.T) {
	for _, c := range summaryCases {
		d := summaryDocument(c.name, c.fio, c.iomatrix)
		var b bytes.Buffer
		WriteText(&b, d, false)
		lines := strings.Split(b.String(), "\n")
		header := []string{
			"target:    /t (file), 1GiB = 1,073,741,824 bytes for both tools",
			"fio:       fio-3.33, --ioengine=io_uring --iodepth=QD --numjobs=JOBS --randrepeat=0 --norandommap --fixedbufs=1 --registerfiles=1 (fio's peak-IOPS options; --fio-defaults for none)",
			"iomatrix:  0.1.0, --engine uring",
			fmt.Sprintf("runs:      %s per pattern, fio first in odd pairs and iomatrix first in even ones, each 10s after a 1s ramp", units.Count(len(c.fio), "pair")),
			"cpu-s/Mio: user+sys CPU seconds per million I/Os, from each process's rusage at exit (start-up and ramp included)",
			"",
			"pattern             pair     fio IOPS  iomatrix IOPS   ratio  fio cpu-s/Mio  iomatrix cpu-s/Mio",
		}
		if !slices.Equal(lines[:len(header)], header) {
			t.Errorf("%s: header\n%s\nwant\n%s", c.name, strings.Join(lines[:len(header)], "\n"), strings.Join(header, "\n"))
		}
		rows := lines[len(header):]
		for k := range c.fio {
			want := fmt.Sprintf("rand-4k-r100-qd32 %6d %12s", k+1, c.fioIOPSText[k])
			if !strings.HasPrefix(rows[k], want) || strings.Fields(rows[k])[4] != c.ratioText[k] || strings.Fields(rows[k])[6] != c.cpuTxt[k] {
				t.Errorf("%s: row %q, want it to start %q with ratio %s and iomatrix cpu-s/Mio %s", c.name, rows[k], want, c.ratioText[k], c.cpuTxt[k])
			}
		}
		if m := rows[len(c.fio)]; !strings.HasPrefix(m, "rand-4k-r100-qd32 median ") || len(m) != len(header[len(header)-1]) {
			t.Errorf("%s: median row %q", c.name, m)
		}
		after := rows[len(c.fio)+1:]
		if c.interval != "" {
			if want := strings.Repeat(" ", len("rand-4k-r100-qd32 ")+7) + c.interval; after[0] != want {
				t.Errorf("%s: under the median row\n%q\nwant\n%q", c.name, after[0], want)
			}
			after = after[1:]
		}
		if rest := strings.Join(after, "\n"); rest != "\n" {
			t.Errorf("%s: after the median row %q, want one blank line and no summary (one pattern)", c.name, rest)
		}
	}
	// The last case's median row, in full: n/a for iomatrix.
	d := summaryDocument("x", summaryCases[2].fio, summaryCases[2].iomatrix)
	var b bytes.Buffer
	NewText(&b, nil, false).Pattern(&d.Patterns[0])
	if want := "rand-4k-r100-qd32 median          500            n/a     n/a       1000.000                 n/a\n\n"; b.String() != want {
		t.Errorf("median row\n%q\nwant\n%q", b.String(), want)
	}

	// Two patterns, one cut short: the summary repeats both medians,
	// the cut one gets no median row of its own, and the table says it
	// was interrupted; a file read in place says so.
	d = summaryDocument("a", summaryCases[0].fio, summaryCases[0].iomatrix)
	cut := summaryDocument("b", summaryCases[1].fio[:1], summaryCases[1].iomatrix[:1]).Patterns[0]
	cut.Name, cut.Pattern.QueueDepth = "rand-4k-r100-qd1", 1
	d.Patterns = append(d.Patterns, cut)
	d.finish(false)
	b.Reset()
	WriteText(&b, d, true)
	out := b.String()
	for _, want := range []string{
		"target:    /t (file, read in place), ",
		"rand-4k-r100-qd1       1       40,000         44,000   1.100          5.000               2.273\n" +
			"medians (ratio: the median of the pairs' iomatrix/fio IOPS ratios; interval: where it lies, and how surely)\n" +
			"pattern             pair     fio IOPS  iomatrix IOPS   ratio  fio cpu-s/Mio  iomatrix cpu-s/Mio  ratio interval\n",
		"rand-4k-r100-qd32              45,000         45,000   1.000          5.000               2.000  0.750-1.100 (75 %)\n" +
			"rand-4k-r100-qd1               40,000         44,000   1.100          5.000               2.273  n/a\n" +
			"interrupted: the pairs above are all that ran\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks\n%s\nin\n%s", want, out)
		}
	}
	if strings.Count(out, "qd32 median ")+strings.Count(out, "qd1 median ") != 1 {
		t.Errorf("want one median row (the cut pattern has none):\n%s", out)
	}
}

// fioFixture is a recorded fio report of the fio package's tests, and the
// total the import code reads from it.
func fioFixture(t *testing.T, name string) ([]byte, results.Total) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "iotest", "fio", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := fio.Import(name, bytes.NewReader(data))
	if err != nil || len(doc.Results) != 1 {
		t.Fatalf("%s: %v", name, err)
	}
	return data, doc.Results[0].Total
}

// Run says first how many runs it makes and about how long they take,
// alternates the tools, fio first, reads each run's figures (fio's with
// the import code), computes each pair's ratio, the CPU per million I/Os
// and the medians; a failed run is n/a, said once, and the comparison
// goes on; the runs are kept.
func TestRun(t *testing.T) {
	fixture, fioTotal := fioFixture(t, "randread.json")
	iomIOPS := []float64{30000, 50000, 40000}
	var calls []string
	fioRuns, iomRuns := 0, 0
	run := func(_ context.Context, argv []string) Process {
		if argv[0] == "fio" && (argv[1] == "--version" || slices.Contains(argv, "--parse-only")) {
			return fakeFio("")(context.Background(), argv)
		}
		calls = append(calls, argv[0])
		if argv[0] == "fio" {
			if fioRuns++; fioRuns == 3 {
				return Process{Stderr: []byte("fio: something broke\n"), Err: errors.New("exit status 1"), CPU: time.Second}
			}
			return Process{Stdout: fixture, CPU: 2 * time.Second}
		}
		doc := results.NewDocument(results.TargetInfo{}, results.Settings{}, "")
		doc.Results = append(doc.Results, results.Result{Total: results.Total{IOPS: iomIOPS[iomRuns%3], IOs: 500000}})
		iomRuns++
		out, _ := json.Marshal(doc)
		return Process{Stdout: out, Stderr: []byte("iomatrix: a notice\n"), CPU: time.Second}
	}
	var notices, status []string
	var keepErrs []error
	o := okOptions(t)
	o.Pairs, o.Run, o.Keep = 3, run, t.TempDir()
	o.Notice = func(s string) { notices = append(notices, s) }
	o.Status = func(s string) { status = append(status, s) }
	o.KeepFailed = func(err error) { keepErrs = append(keepErrs, err) }
	c, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	d, err := c.Run(context.Background(), results.TargetInfo{Path: "/t", Kind: "file", SizeBytes: 1 << 20}, c.Text(&table))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fio", "iomatrix", "iomatrix", "fio", "fio", "iomatrix"}; !slices.Equal(calls, want) {
		t.Errorf("runs %v, want %v", calls, want)
	}
	res := d.Patterns[0]
	if len(res.Pairs) != 3 || d.FailedRuns != 1 || !d.Complete {
		t.Fatalf("%d pairs, %d failed runs, complete %v", len(res.Pairs), d.FailedRuns, d.Complete)
	}
	fioCPU := 2 / (float64(fioTotal.IOs) / 1e6)
	for k, p := range res.Pairs[:2] {
		if *p.Fio.IOPS != fioTotal.IOPS || p.Fio.IOs != fioTotal.IOs || *p.Iomatrix.IOPS != iomIOPS[k] {
			t.Errorf("pair %d: %+v", k+1, p)
		}
		if !closeTo(*p.Ratio, iomIOPS[k]/fioTotal.IOPS) || !closeTo(*p.Fio.CPUSecondsPerMio, fioCPU) || !closeTo(*p.Iomatrix.CPUSecondsPerMio, 2) {
			t.Errorf("pair %d: ratio %v, cpu-s/Mio %v %v", k+1, *p.Ratio, *p.Fio.CPUSecondsPerMio, *p.Iomatrix.CPUSecondsPerMio)
		}
	}
	failed := res.Pairs[2]
	if failed.Fio.IOPS != nil || failed.Ratio != nil || failed.Fio.Error != "exit status 1: fio: something broke" || failed.Iomatrix.IOPS == nil {
		t.Errorf("failed pair %+v", failed)
	}
	wantNotices := []string{"1 pattern × 3 pairs × 2 tools, about 9s", "rand-4k-r100-qd16 pair 1, iomatrix: a notice",
		"rand-4k-r100-qd16 pair 3: fio failed: exit status 1: fio: something broke"}
	if !slices.Equal(notices, wantNotices) {
		t.Errorf("notices %q, want %q", notices, wantNotices)
	}
	if len(status) != 12 || status[0] != "rand-4k-r100-qd16 pair 1: fio, 1s after a 0s ramp" || status[1] != "" {
		t.Errorf("status %q", status)
	}
	m := res.Median
	if !closeTo(*m.Ratio, (iomIOPS[0]+iomIOPS[1])/2/fioTotal.IOPS) || *m.IomatrixIOPS != 40000 || *m.FioIOPS != fioTotal.IOPS {
		t.Errorf("median %+v", m)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	wantRows := []string{
		fmt.Sprintf("rand-4k-r100-qd16 1 %s 30,000 %.3f %.3f 2.000", units.Thousands(fioTotal.IOPS, 0), 30000/fioTotal.IOPS, fioCPU),
		"rand-4k-r100-qd16 3 n/a 40,000 n/a n/a 2.000",
		fmt.Sprintf("rand-4k-r100-qd16 median %s 40,000 %.3f %.3f 2.000", units.Thousands(fioTotal.IOPS, 0), *m.Ratio, fioCPU),
	}
	for _, want := range wantRows {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Join(strings.Fields(l), " ") == want }) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// The runs and the document are kept.
	if len(keepErrs) > 0 {
		t.Fatal(keepErrs)
	}
	if failed.Fio.Raw != "p01-rand-4k-r100-qd16.pair3.fio.json" {
		t.Errorf("raw %q", failed.Fio.Raw)
	}
	if got, err := os.ReadFile(filepath.Join(o.Keep, "p01-rand-4k-r100-qd16.pair3.fio.stderr")); err != nil || string(got) != "fio: something broke\n" {
		t.Errorf("kept stderr %q, %v", got, err)
	}
	var kept Document
	if data, err := os.ReadFile(filepath.Join(o.Keep, "crosscheck.json")); err != nil || json.Unmarshal(data, &kept) != nil || kept.FailedRuns != 1 {
		t.Errorf("kept document: %v", err)
	}
}

// An interrupted comparison ends after the run that was going: half a
// pair compares nothing, and the document says it is not complete.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fixture, _ := fioFixture(t, "randread.json")
	o := okOptions(t)
	o.Pairs = 2
	o.Run = func(_ context.Context, argv []string) Process {
		if argv[1] == "--version" || slices.Contains(argv, "--parse-only") {
			return fakeFio("")(ctx, argv)
		}
		cancel() // while fio runs
		return Process{Stdout: fixture, Err: context.Canceled}
	}
	c, err := New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Run(ctx, results.TargetInfo{Path: "/t", SizeBytes: 1 << 20}, nil)
	if !errors.Is(err, context.Canceled) || d.Complete || len(d.Patterns) != 1 || len(d.Patterns[0].Pairs) != 0 {
		t.Errorf("%v, document %+v", err, d)
	}
}

// iomatrix's ring modes become fio's own options, the header names both,
// and fio's versions of them cannot be given through --fio-extra; fio has
// no idle time for its submission thread, so that is refused.
func TestArgvRingModes(t *testing.T) {
	randread := spec(t, "randread:4k:32")
	for _, c := range []struct {
		ring          iotest.RingMode
		fio, iomatrix string
	}{
		{iotest.RingMode{Poll: true}, "--hipri", "--poll"},
		{iotest.RingMode{SQPoll: true}, "--sqthread_poll=1", "--sqpoll"},
		{iotest.RingMode{SQPoll: true, SQAffine: true, SQCPU: 1}, "--sqthread_poll=1 --sqthread_poll_cpu=1", "--sqpoll --sqpoll-cpu 1"},
		{iotest.RingMode{Poll: true, SQPoll: true}, "--hipri --sqthread_poll=1", "--poll --sqpoll"},
	} {
		cmp := &Comparison{o: Options{Fio: "fio", Iomatrix: "iomatrix", Target: "/dev/ng0n1", Size: 1 << 30,
			Engine: iotest.EngineUring, Runtime: time.Second, Ring: c.ring}, fioTuned: FioTuned}
		fio, iom := strings.Join(cmp.fioArgv(randread), " "), strings.Join(cmp.iomatrixArgv(randread), " ")
		if !strings.HasSuffix(fio, "--fixedbufs=1 --registerfiles=1 "+c.fio) || !strings.HasSuffix(iom, c.iomatrix) {
			t.Errorf("%+v:\n fio %s\n iomatrix %s\nwant them to end %q and %q", c.ring, fio, iom, c.fio, c.iomatrix)
		}
		var b strings.Builder
		NewText(&b, []pattern.Spec{randread}, false).Start(cmp.newDocument())
		if !strings.Contains(b.String(), c.fio+" (as iomatrix's "+c.iomatrix+")") || !strings.Contains(b.String(), "--engine uring "+c.iomatrix) {
			t.Errorf("%+v: header does not name both:\n%s", c.ring, b.String())
		}
	}
	o := okOptions(t)
	for _, extra := range []string{"--hipri", "--sqthread_poll=1", "--sqthread_poll_cpu=0"} {
		o.FioExtra = []string{extra}
		var ce *ControlledError
		if err := o.Validate(); !errors.As(err, &ce) {
			t.Errorf("--fio-extra %s: %v, want it refused as crosscheck's own", extra, err)
		}
	}
	o.FioExtra = nil
	o.Ring = iotest.RingMode{SQPoll: true, SQIdle: time.Second}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "fio has no such option") {
		t.Errorf("--sqpoll-idle: %v", err)
	}
	o.Ring, o.Engine = iotest.RingMode{Poll: true}, iotest.EnginePsync
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "uring engine") {
		t.Errorf("--poll with psync: %v", err)
	}
}

// Without a size asked, a new file gets NewFileSize and an existing
// target keeps the size its layout rules give it; a size asked stands.
func TestPlanSize(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "there.dat")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target     string
		size, want int64
	}{
		{filepath.Join(dir, "new.dat"), 0, 4 << 30},
		{existing, 0, 0},
		{existing, 64 << 20, 64 << 20},
		{filepath.Join(dir, "new.dat"), 64 << 20, 64 << 20},
	} {
		if got := planSize(c.target, c.size); got != c.want {
			t.Errorf("size %d on %s: %d, want %d", c.size, filepath.Base(c.target), got, c.want)
		}
	}
}

// Plan touches nothing and completes the options from the target's plan;
// a pattern the target cannot hold is a SpecError naming both, and a
// target's own refusal is the target's.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dat")
	o := okOptions(t)
	o.Target, o.Size, o.Sys, o.Engine = path, 1<<20, sysfs.Default(), iotest.EnginePsync
	plan, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s was created", path)
	}
	if plan.Path != path || o.Target != path || o.Size != 1<<20 || o.ReadInPlace || o.Passthrough || o.Engine != iotest.EnginePsync {
		t.Errorf("plan %+v, options %+v", plan, o)
	}

	o = okOptions(t)
	o.Target, o.Size, o.Sys, o.Engine = path, 8<<10, sysfs.Default(), iotest.EnginePsync
	o.Patterns = []pattern.Spec{spec(t, "randread:4k:1"), spec(t, "randread:16k:1")}
	_, err = o.Plan()
	var se *pattern.SpecError
	if !errors.As(err, &se) || se.Spec != "randread:16k:1" || !strings.HasPrefix(err.Error(), `"randread:16k:1": `+path+": block_size: ") {
		t.Errorf("a pattern larger than the target: %v", err)
	}

	theirs := filepath.Join(dir, "theirs.dat")
	if err := os.WriteFile(theirs, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	o = okOptions(t)
	o.Target, o.Size, o.Sys, o.Engine = theirs, 0, sysfs.Default(), iotest.EnginePsync
	o.Patterns = []pattern.Spec{spec(t, "randwrite:4k:1")}
	var m *fault.Mention
	if _, err := o.Plan(); !errors.As(err, &m) || !strings.Contains(m.Text(func(s string) string { return "<" + s + ">" }), "<force>") {
		t.Errorf("writes to a file iomatrix did not create: %v", err)
	}
	o.Force = true
	if _, err := o.Plan(); err != nil {
		t.Errorf("--force: %v", err)
	}

	o = okOptions(t)
	o.Target, o.Sys, o.Pairs = path, sysfs.Default(), 0
	if _, err := o.Plan(); !errors.As(err, new(*fault.InputError)) || !strings.Contains(err.Error(), "pairs") {
		t.Errorf("pairs 0: %v", err)
	}
}

// flag spells an option as a command line does.
func flag(option string) string { return "--" + option }

// A fio option that crosscheck sets names what sets it in crosscheck's
// own terms, and as the reader spells it through its Mention.
func TestControlledErrorMention(t *testing.T) {
	for _, c := range []struct {
		ce         ControlledError
		own, spelt string
	}{
		{ControlledError{Arg: "--size=4g", Option: "size"}, "--size=4g is set by the size option", "--size=4g is set by --size"},
		{ControlledError{Arg: "--hipri", Option: "poll"}, "--hipri is set by the poll option", "--hipri is set by --poll"},
		{ControlledError{Arg: "--direct=0", Value: "always 1"}, "--direct=0 is set by crosscheck (always 1)", "--direct=0 is set by crosscheck (always 1)"},
		{ControlledError{Arg: "--name=x"}, "--name=x is set by crosscheck", "--name=x is set by crosscheck"},
	} {
		var m *fault.Mention
		if !errors.As(&c.ce, &m) || c.ce.Error() != c.own || m.Error() != c.own || m.Text(flag) != c.spelt {
			t.Errorf("%+v: %q; want %q, spelt %q", c.ce, c.ce.Error(), c.own, c.spelt)
		}
	}
}

// Prepare reads the patterns, plans the target and checks the tools,
// touching nothing; a pattern that cannot be read or held is bad input
// that names the pattern option as the reader spells it.
func TestPrepare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dat")
	o := okOptions(t)
	o.Target, o.Size, o.Sys, o.Engine, o.Run, o.Patterns = path, 1<<20, sysfs.Default(), iotest.EnginePsync, fakeFio(""), nil
	c, plan, err := Prepare(context.Background(), []string{"randread:4k:1", "randwrite:8k:4"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s was created", path)
	}
	if plan.Path != path || plan.Size != 1<<20 || len(c.Options().Patterns) != 2 || c.Options().Target != path || c.Document().Fio.Version != "fio-3.33" {
		t.Errorf("plan %+v, options %+v", plan, c.Options())
	}
	for _, tc := range []struct {
		specs []string
		size  int64
		says  string
	}{
		{[]string{"randread:4k:0"}, 1 << 20, `--pattern "randread:4k:0": QD: 0 is outside 1..256`},
		{[]string{"randread:16k:1"}, 8 << 10, `--pattern "randread:16k:1": ` + path + ": block_size: "},
	} {
		o.Size = tc.size
		_, _, err := Prepare(context.Background(), tc.specs, o)
		var ie *fault.InputError
		var m *fault.Mention
		if !errors.As(err, &ie) || !errors.As(err, &m) || !strings.HasPrefix(m.Text(flag), tc.says) || !strings.HasPrefix(err.Error(), "pattern ") {
			t.Errorf("%q on %d bytes: %v; want bad input spelt %q", tc.specs, tc.size, err, tc.says)
		}
	}
}

// Report makes Keep, runs, and writes the table or the document; runs
// that failed are its error, which says where their output is or names
// the keep option that would keep it; a Keep that cannot be made is an
// error naming the keep option, before any run.
func TestReport(t *testing.T) {
	runs := 0
	run := func(_ context.Context, argv []string) Process {
		if argv[1] == "--version" || slices.Contains(argv, "--parse-only") {
			return fakeFio("")(context.Background(), argv)
		}
		runs++
		if argv[0] == "fio" {
			return Process{Stderr: []byte("fio: something broke\n"), Err: errors.New("exit status 1")}
		}
		doc := results.NewDocument(results.TargetInfo{}, results.Settings{}, "")
		doc.Results = append(doc.Results, results.Result{Total: results.Total{IOPS: 1000, IOs: 1000}})
		out, _ := json.Marshal(doc)
		return Process{Stdout: out}
	}
	target := results.TargetInfo{Path: "/t", Kind: "file", SizeBytes: 1 << 20}
	for _, format := range []string{"text", "json"} {
		o := okOptions(t)
		o.Run, o.Keep = run, filepath.Join(t.TempDir(), "keep")
		c, err := New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = c.Report(context.Background(), target, &out, format)
		var m *fault.Mention
		if want := "1 run of 2 failed, their figures left out: see the lines above and their raw output in " + o.Keep; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", format, err, want)
		}
		if errors.As(err, new(*fault.InputError)) || !errors.As(err, &m) {
			t.Errorf("%s: %T is not a failure with a mention", format, err)
		}
		if fi, err := os.Stat(o.Keep); err != nil || !fi.IsDir() {
			t.Errorf("%s: keep not made: %v", format, err)
		}
		var d Document
		switch {
		case format == "json" && (json.Unmarshal(out.Bytes(), &d) != nil || d.FailedRuns != 1):
			t.Errorf("json: %s", out.String())
		case format == "text" && !strings.Contains(out.String(), "rand-4k-r100-qd16"):
			t.Errorf("text: %s", out.String())
		}
	}
	o := okOptions(t)
	o.Run = run
	c, _ := New(context.Background(), o)
	var m *fault.Mention
	if err := c.Report(context.Background(), target, io.Discard, "text"); !errors.As(err, &m) ||
		!strings.HasSuffix(m.Text(flag), ", or re-run with --keep DIR for their raw output") {
		t.Errorf("without keep: %v", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Keep = t.TempDir()
	c, _ = New(context.Background(), o)
	c.o.Keep = filepath.Join(file, "keep") // made impossible after New checked it
	before := runs
	var out bytes.Buffer
	err := c.Report(context.Background(), target, &out, "json")
	if !errors.As(err, &m) || m.Text(flag) != "--keep: mkdir "+file+": not a directory" || !errors.Is(err, syscall.ENOTDIR) ||
		!strings.HasPrefix(err.Error(), "keep: mkdir ") || runs != before || out.Len() != 0 {
		t.Errorf("keep that cannot be made: %v (%d runs, output %q)", err, runs-before, out.String())
	}
}
