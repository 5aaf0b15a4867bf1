package iocost

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The coefficients and costs, worked by hand from blk-iocost.c's
// formulas: vtime is 2^37 a second, a page 4096 bytes.
func TestCoefsByHand(t *testing.T) {
	// 1 GiB/s is 2^18 pages a second: a page costs 2^37/2^18 = 2^19.
	// 2^17 sequential IOPS cost 2^20 each, so seqio = 2^20 − 2^19; 2^15
	// random IOPS cost 2^22, so randio = 2^22 − 2^19.
	m := Model{RBps: 1 << 30, RSeqIOPS: 1 << 17, RRandIOPS: 1 << 15, WBps: 1 << 29, WSeqIOPS: 1 << 16, WRandIOPS: 1 << 14}
	c := m.Coefs()
	want := Coefs{RPage: 1 << 19, RSeqIO: 1<<20 - 1<<19, RRandIO: 1<<22 - 1<<19, WPage: 1 << 20, WSeqIO: 1<<21 - 1<<20, WRandIO: 1<<23 - 1<<20}
	if c != want {
		t.Fatalf("coefs %+v, want %+v", c, want)
	}
	// A 4K random read costs randio + one page = 2^22: the model's own
	// random IOPS, 2^15, at full vrate.
	if got := c.BioCost(false, 4096, true); got != 1<<22 {
		t.Errorf("4K random read costs %d, want 2^22", got)
	}
	if got := c.PredictIOPS(results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100}, 0, 0); got != 1<<17 {
		// A span of 0 seeks nowhere: every I/O is charged as sequential.
		t.Errorf("4K reads over no span: %v IOPS, want the sequential 2^17", got)
	}
	// 64K sequential reads: seqio + 16 pages = 17 × 2^19.
	if got := c.BioCost(false, 65536, false); got != 17<<19 {
		t.Errorf("64K sequential read costs %d, want 17 × 2^19", got)
	}
	// Smaller than a page: still one page. An empty bio: nothing.
	if c.BioCost(true, 512, false) != want.WSeqIO+want.WPage || c.BioCost(true, 0, true) != 0 {
		t.Errorf("512-byte write %d, empty %d", c.BioCost(true, 512, false), c.BioCost(true, 0, true))
	}
	// A 50/50 4K random mix over 1 GiB: (1−16/1024)² of the I/Os seek
	// far.
	far := (1 - 16.0/1024) * (1 - 16.0/1024)
	if got := FarShare(1 << 30); got != far {
		t.Errorf("far share over 1 GiB %v, want %v", got, far)
	}
	mix := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50}
	read := far*float64(1<<22) + (1-far)*float64(1<<20)
	write := far*float64(1<<23) + (1-far)*float64(1<<21)
	if got, want := c.MeanCost(mix, 1<<30, 0), 0.5*read+0.5*write; math.Abs(got-want) > 1e-6 {
		t.Errorf("mixed cost %v, want %v", got, want)
	}
	// A 1 MiB read split at 512 KiB: two bios, the second sequential.
	split := c.MeanCost(results.Pattern{Access: results.Sequential, BlockSize: 1 << 20, ReadPct: 100}, 1<<30, 512<<10)
	if want := float64(2*want.RSeqIO + 256*want.RPage); split != want {
		t.Errorf("split 1 MiB read %v, want %v", split, want)
	}
}

// The kernel's rounding: up, at each division; a base cost no larger
// than a page is 0; a bandwidth whose pages do not count gives a page of 1.
func TestCoefsRounding(t *testing.T) {
	page, seqio, randio := lcoefs(1_000_000, 3, 1_000_000_000)
	// ⌈1e6/4096⌉ = 245 pages a second; ⌈2^37/245⌉ = 560975321.
	if page != 560975321 {
		t.Errorf("page %d, want 560975321", page)
	}
	// ⌈2^37/3⌉ = 45812984491, less the page.
	if seqio != 45812984491-560975321 {
		t.Errorf("seqio %d", seqio)
	}
	if randio != 0 {
		t.Errorf("randio %d, want 0 (a billion IOPS cost less than a page)", randio)
	}
	if p, _, _ := lcoefs(math.MaxUint64, 0, 0); p != 1 {
		t.Errorf("huge bps: page %d, want 1", p)
	}
}

func TestLinesAndChecks(t *testing.T) {
	m := Model{RBps: 2 << 30, RSeqIOPS: 400000, RRandIOPS: 300000, WBps: 1 << 30, WSeqIOPS: 200000, WRandIOPS: 100000}
	line := m.Line("259:0")
	if line != "259:0 ctrl=user model=linear rbps=2147483648 rseqiops=400000 rrandiops=300000 wbps=1073741824 wseqiops=200000 wrandiops=100000" {
		t.Errorf("model line %q", line)
	}
	dev, ctrl, back, err := ParseModelLine(line)
	if err != nil || dev != "259:0" || ctrl != "user" || back != m {
		t.Errorf("read back %s %s %+v %v", dev, ctrl, back, err)
	}
	if _, _, _, err := ParseModelLine("259:0 ctrl=auto model=quadratic rbps=1"); err == nil {
		t.Error("a model other than linear read")
	}
	q := QoS{RPct: 95, WPct: 95, RLatUS: 750, WLatUS: 2250, Min: 60, Max: 100}
	if got := q.Line("259:0"); got != "259:0 enable=1 ctrl=user rpct=95.00 rlat=750 wpct=95.00 wlat=2250 min=60.00 max=100.00" {
		t.Errorf("qos line %q", got)
	}
	for _, bad := range []QoS{{RPct: 101, Min: 60, Max: 100}, {RPct: 95, Min: 0.5, Max: 100}, {RPct: 95, Min: 60, Max: 20000}, {RPct: 95, Min: 90, Max: 80}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed its check", bad)
		}
	}
	if q.Check() != nil || m.Check() != nil {
		t.Errorf("good values refused: %v %v", q.Check(), m.Check())
	}
	for _, bad := range []Model{{}, {RBps: 1 << 50, RSeqIOPS: 1, RRandIOPS: 1, WBps: 1, WSeqIOPS: 1, WRandIOPS: 1}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed its check", bad)
		}
	}
}

// cell is a closed-loop result with the figures of one direction.
func cell(access results.Access, bs int64, read, qd int, iops, mibps float64) results.Result {
	p := results.Pattern{Access: access, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: 1}
	r := results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOPS: iops, MiBPerS: mibps}}
	d := results.DirStats{IOPS: iops, MiBPerS: mibps}
	if read == 100 {
		r.Read = d
	} else if read == 0 {
		r.Write = d
	} else {
		r.Read = results.DirStats{IOPS: iops * float64(read) / 100}
		r.Write = results.DirStats{IOPS: iops * float64(100-read) / 100}
	}
	return r
}

// modelDoc is a document with the six cells of the iocost profile:
// 2 GiB/s and 1 GiB/s, 400,000 and 200,000 sequential IOPS, 300,000 and
// 100,000 random.
func modelDoc(more ...results.Result) *results.Document {
	doc := results.NewDocument(results.TargetInfo{Device: "259:0", SizeBytes: 1 << 30}, results.Settings{}, "")
	doc.Results = append([]results.Result{
		cell(results.Sequential, 64<<20, 100, 1, 32, 2048),
		cell(results.Sequential, 64<<20, 0, 1, 16, 1024),
		cell(results.Sequential, 4096, 100, 64, 400000, 1562.5),
		cell(results.Random, 4096, 100, 64, 300000, 1171.9),
		cell(results.Sequential, 4096, 0, 64, 200000, 781),
		cell(results.Random, 4096, 0, 64, 100000, 390),
	}, more...)
	return doc
}

func TestDeriveAndCheck(t *testing.T) {
	doc := modelDoc(
		cell(results.Sequential, 1<<20, 100, 8, 1900, 1900),
		cell(results.Random, 4096, 100, 1, 20000, 78),
		cell(results.Random, 4096, 50, 32, 140000, 547),
		cell(results.Random, 16384, 100, 32, 60000, 937),
	)
	d, err := Derive([]*results.Document{doc})
	if err != nil {
		t.Fatal(err)
	}
	want := Model{RBps: 2048 << 20, RSeqIOPS: 400000, RRandIOPS: 300000, WBps: 1024 << 20, WSeqIOPS: 200000, WRandIOPS: 100000}
	if d.Model != want || d.Device != "259:0" || len(d.Figures) != 6 {
		t.Fatalf("derived %+v from %d figures, want %+v", d.Model, len(d.Figures), want)
	}
	if d.Figures[0].Cell != "seq-read-64m-qd1" || !strings.Contains(d.Figures[0].How, "2048.0 MiB/s") {
		t.Errorf("rbps's figure %+v", d.Figures[0])
	}
	if d.QoS != nil || len(d.Notes) == 0 {
		t.Errorf("a QoS without open-loop cells: %+v, notes %v", d.QoS, d.Notes)
	}

	ch := CheckModel(d.Model, Cells([]*results.Document{doc}), 1<<30, 0)
	byName := map[string]CellCheck{}
	for _, c := range ch.Cells {
		byName[c.Name] = c
	}
	// The model's own 4K cells are predicted about as measured (random
	// ones a little above: 3 % of their seeks are near, and cheap).
	if r := byName["rand-4k-r100-qd64"].Ratio; r < 0.95 || r > 1.01 {
		t.Errorf("the model's own random read cell at ratio %v", r)
	}
	// QD1 is not the shape's capacity: QD64 is.
	if byName["rand-4k-r100-qd1"].Capacity || !byName["rand-4k-r100-qd64"].Judged {
		t.Errorf("capacity marks: qd1 %v, qd64 judged %v", byName["rand-4k-r100-qd1"].Capacity, byName["rand-4k-r100-qd64"].Judged)
	}
	// A shape measured only at QD1 is its own capacity, but not judged.
	if c := byName["seq-read-64m-qd1"]; !c.Capacity || c.Judged {
		t.Errorf("64M QD1: capacity %v, judged %v", c.Capacity, c.Judged)
	}
	// 16K random reads at 60,000 IOPS, where the model predicts about
	// 2^37/(randio + 4 pages) ≈ 110,700: the most optimistic shape, and
	// the honest vrate is its ratio.
	w := ch.Worst
	if len(w) == 0 || w[0].Name != "rand-16k-r100-qd32" {
		t.Fatalf("worst cells %+v", w)
	}
	c := d.Model.Coefs()
	pred := float64(VtimePerSec) / (FarShare(1<<30)*float64(c.RRandIO+4*c.RPage) + (1-FarShare(1<<30))*float64(c.RSeqIO+4*c.RPage))
	if math.Abs(w[0].Predicted-math.Round(pred)) > 0.5 || math.Abs(ch.HonestVratePct-math.Floor(100*100*60000/pred)/100) > 0.011 {
		t.Errorf("worst predicted %v (want %v), honest vrate %v", w[0].Predicted, math.Round(pred), ch.HonestVratePct)
	}

	_, err = Derive([]*results.Document{{Target: doc.Target, Results: doc.Results[:3]}})
	if !errors.Is(err, ErrCannotDerive) || !strings.Contains(err.Error(), "rrandiops") {
		t.Errorf("a document without the random cells: %v", err)
	}
}

// QoS from open-loop cells at 90 % of the random IOPS: p95 × 1.5.
func TestDeriveQoS(t *testing.T) {
	doc := modelDoc()
	for _, c := range []struct {
		read bool
		rate float64
		p95  uint64
	}{{true, 270000, 500_000}, {false, 90000, 1_500_000}, {true, 150000, 100_000}} {
		read := 0
		if c.read {
			read = 100
		}
		r := cell(results.Random, 4096, read, 64, c.rate, 0)
		r.Pattern.Rate = results.Rate{IOPS: c.rate, Arrival: results.ArrivalPoisson}
		r.Name = r.Pattern.Name()
		l := results.Latency{P95: c.p95, P99: 3 * c.p95}
		if c.read {
			r.Read.LatNS = l
		} else {
			r.Write.LatNS = l
		}
		doc.Results = append(doc.Results, r)
	}
	d, err := Derive([]*results.Document{doc})
	if err != nil {
		t.Fatal(err)
	}
	want := QoS{RPct: 95, WPct: 95, RLatUS: 750, WLatUS: 2250, Min: 60, Max: 100}
	if d.QoS == nil || *d.QoS != want {
		t.Fatalf("QoS %+v, want %+v (notes %v)", d.QoS, want, d.Notes)
	}
	doc.Target.Rotational = true
	if d, _ := Derive([]*results.Document{doc}); d.QoS.RPct != 50 {
		t.Errorf("rotational: rpct %v, want 50", d.QoS.RPct)
	}
	doc.Target.Rotational = false

	// A rate run of its own (run --rate 90%) measured the device slower
	// than the sweep did: its 90 % is of its own maximum.
	run := results.NewDocument(doc.Target, results.Settings{}, "")
	base := cell(results.Random, 4096, 100, 64, 200000, 0)
	open := cell(results.Random, 4096, 100, 64, 180000, 0)
	open.Pattern.Rate = results.Rate{IOPS: 180000, Arrival: results.ArrivalPoisson}
	open.Name = open.Pattern.Name()
	open.Read.LatNS = results.Latency{P95: 200_000}
	run.Results = []results.Result{base, open}
	doc.Results = doc.Results[:len(doc.Results)-3] // the read cells at the sweep's 90 % go
	w := cell(results.Random, 4096, 0, 64, 90000, 0)
	w.Pattern.Rate = results.Rate{IOPS: 90000, Arrival: results.ArrivalPoisson}
	w.Name = w.Pattern.Name()
	w.Write.LatNS = results.Latency{P95: 1_000_000}
	doc.Results = append(doc.Results, w)
	d, err = Derive([]*results.Document{doc, run})
	if err != nil || d.QoS == nil || d.QoS.RLatUS != 300 || d.QoS.WLatUS != 1500 || d.Model.RRandIOPS != 300000 {
		t.Errorf("QoS from a run of its own: %+v, model %+v, %v, notes %v", d.QoS, d.Model, err, d.Notes)
	}
}

// What reset writes: a ctrl=auto line by ctrl=auto alone (the kernel
// takes any figure given as a user's), a ctrl=user line as it was.
func TestRestoreLine(t *testing.T) {
	for _, c := range []struct {
		saved string
		qos   bool
		want  string
	}{
		{"", false, "259:0 ctrl=auto"},
		{"", true, "259:0 enable=0 ctrl=auto"},
		{"259:0 ctrl=auto model=linear rbps=488636629 rseqiops=8932", false, "259:0 ctrl=auto"},
		{"259:0 enable=1 ctrl=auto rpct=0.00 rlat=25000", true, "259:0 enable=1 ctrl=auto"},
		{"259:0 ctrl=user model=linear rbps=1 rseqiops=2", false, "259:0 ctrl=user model=linear rbps=1 rseqiops=2"},
		{"259:0 enable=1 ctrl=user rpct=95.00 rlat=750", true, "259:0 enable=1 ctrl=user rpct=95.00 rlat=750"},
	} {
		if got := restoreLine("259:0", c.saved, c.qos); got != c.want {
			t.Errorf("restore %q: %q, want %q", c.saved, got, c.want)
		}
	}
}

// --vrate honest: min and max scaled by the honest vrate, but only where
// the check judged a shape beyond the cells the model was read from.
func TestHonest(t *testing.T) {
	q := QoS{RPct: 95, WPct: 95, RLatUS: 750, WLatUS: 2250, Min: 60, Max: 100}
	d := Derived{QoS: &q, Figures: []Figure{{Name: "rrandiops", Cell: "rand-4k-r100-qd64"}}}
	own := CellCheck{Name: "rand-4k-r100-qd64", Judged: true, Ratio: 1}
	other := CellCheck{Name: "rand-16k-r0-qd32", Judged: true, Ratio: 0.6315}
	if _, _, err := Honest(d, Check{Cells: []CellCheck{own}, HonestVratePct: 100}); err == nil {
		t.Error("no shape judged beyond the model's own: scaled anyway")
	}
	got, how, err := Honest(d, Check{Cells: []CellCheck{own, other}, HonestVratePct: 63.15})
	if err != nil || got.Min != 37.89 || got.Max != 63.15 || got.RLatUS != 750 || !strings.Contains(how, "63.15 %") {
		t.Errorf("honest: %+v, %q, %v; want min 37.89, max 63.15, the rest as derived", got, how, err)
	}
	if got, _, _ := Honest(d, Check{Cells: []CellCheck{own, other}, HonestVratePct: 1}); got.Min != 1 || got.Max != 1 {
		t.Errorf("a vrate of 1 %%: min %v max %v, want both 1 (the kernel's floor)", got.Min, got.Max)
	}
	if _, _, err := Honest(Derived{}, Check{}); err == nil {
		t.Error("no QoS derived: scaled anyway")
	}
}

// The controller's figures come from io.stat's cost.* keys, which the
// kernel writes only while iocost is enabled (lines as a 6.1 kernel
// writes them).
func TestStat(t *testing.T) {
	root := t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, a, idle := filepath.Join(root, "v"), filepath.Join(root, "a"), filepath.Join(root, "idle")
	write(filepath.Join(root, "io.stat"), "7:0 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.vrate=63.25 cost.usage=900\n")
	write(filepath.Join(v, "io.stat"), "259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.usage=120\n")
	write(filepath.Join(a, "io.stat"), "259:0 rbytes=0 wbytes=16384 rios=0 wios=1 dbytes=0 dios=0 cost.usage=780 cost.wait=5 cost.indebt=0 cost.indelay=0\n")
	write(filepath.Join(idle, "io.stat"), "")
	h := Host{CgroupRoot: root}
	s, ok, err := h.Stat("259:0", v, a, idle)
	if err != nil || !ok || s.VRatePct != 63.25 || len(s.UsageUS) != 3 || s.UsageUS[0] != 120 || s.UsageUS[1] != 780 || s.UsageUS[2] != 0 {
		t.Errorf("enabled: %+v, ok %v, %v", s, ok, err)
	}
	// Disabled: the lines are there without the keys.
	write(filepath.Join(root, "io.stat"), "259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n")
	write(filepath.Join(v, "io.stat"), "259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n")
	if s, ok, err := h.Stat("259:0", v); err != nil || ok {
		t.Errorf("disabled: %+v, ok %v, %v", s, ok, err)
	}
	if _, _, err := h.Stat("259:0", filepath.Join(root, "gone")); err == nil {
		t.Error("a cgroup without io.stat: no error")
	}
}

// The vrate: face, honest, or MIN-MAX as the kernel takes it; anything
// else is bad input of the option "vrate".
func TestParseVrate(t *testing.T) {
	for in, want := range map[string]Vrate{"face": {}, "honest": {Honest: true}, "1-100": {Min: 1, Max: 100}, "60-60": {Min: 60, Max: 60}, "60%-100%": {Min: 60, Max: 100}} {
		if v, err := ParseVrate(in); err != nil || v != want {
			t.Errorf("%s: %+v, %v; want %+v", in, v, err, want)
		}
	}
	for _, in := range []string{"fast", "90-80", "0-100", "1-20000", "50", "NaN-NaN", "NaN-100", "1-NaN", "1-Inf", "-Inf-100",
		"1e1-1e2", "0x10-100", "1--5", "-5-100", "1-", "-100"} {
		var ie *fault.InputError
		if _, err := ParseVrate(in); !errors.As(err, &ie) || ie.Option != "vrate" {
			t.Errorf("%s: %v; want bad input of vrate", in, err)
		}
	}
}

// A path on no block device is bad input of the option "device", led by
// the path; a sysfs root that is not one, or a cgroup2 root that does not
// exist, bad input of the root's option, before the device is looked
// for; the state file is the one given, or the device's by default.
func TestResolve(t *testing.T) {
	root := t.TempDir()
	testenv.Must(t, os.MkdirAll(filepath.Join(root, "class", "block"), 0o755))
	sys := sysfs.NewFS(root, t.TempDir()) // no devices at all
	var ie *fault.InputError
	if _, _, _, err := Resolve(sys, t.TempDir(), "/nonexistent", ""); !errors.As(err, &ie) || ie.Option != "device" || !strings.HasPrefix(ie.Err.Error(), "/nonexistent: ") {
		t.Errorf("a missing path: %v", err)
	}
	for _, c := range []struct {
		sys        sysfs.FS
		cgroupRoot string
		option     string
		says       string
	}{
		{sysfs.NewFS("/nonexistent", "/proc"), t.TempDir(), "sysfs", "/nonexistent does not exist"},
		{sysfs.NewFS(t.TempDir(), "/proc"), t.TempDir(), "sysfs", "is not a sysfs mount: it has no class/block"},
		{sys, "/nonexistent", "cgroupfs", "/nonexistent does not exist"},
	} {
		if _, _, _, err := Resolve(c.sys, c.cgroupRoot, t.TempDir(), ""); !errors.As(err, &ie) || ie.Option != c.option || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want bad input of %s saying %q", c, err, c.option, c.says)
		}
	}
	_, dev, got, err := Resolve(sysfs.Default(), t.TempDir(), t.TempDir(), "")
	testenv.Require(t, err == nil, "the temp dir is on no block device")
	if want := filepath.Join(DefaultStateDir, "iocost-"+strings.ReplaceAll(dev, ":", "_")+".json"); got != want {
		t.Errorf("the default state of %s: %s, want %s", dev, got, want)
	}
	if _, _, got, err := Resolve(sysfs.Default(), t.TempDir(), t.TempDir(), "/tmp/st.json"); err != nil || got != "/tmp/st.json" {
		t.Errorf("the state given: %s, %v", got, err)
	}
}

// The 4K cells measured with merging off are preferred to others, as the
// kernel's procedure measures them; a sequential figure taken from a cell
// with merging on says so, with the disk's merges.
func TestDeriveMergesOff(t *testing.T) {
	doc := modelDoc()
	doc.Results[2].Device.Merges = &results.Counts{Reads: 300000}
	if d, err := Derive([]*results.Document{doc}); err != nil || !strings.Contains(strings.Join(d.Notes, "\n"), "rseqiops comes from seq-read-4k-qd64, measured with the disk's request merging on (the disk merged 300000 requests") {
		t.Errorf("merging on: %v, notes %q", err, d.Notes)
	}
	// The same shapes again with merging off, and fewer IOPS: they set
	// the model, and no note is made of merging.
	off := modelDoc().Results[2:]
	for i := range off {
		off[i].Nomerges = &results.Nomerges{Disk: "nvme0n1", Asked: 2, Value: 2}
		off[i].Read.IOPS /= 2
		off[i].Write.IOPS /= 2
	}
	unmerged := results.NewDocument(doc.Target, results.Settings{}, "")
	unmerged.Results = off
	d, err := Derive([]*results.Document{doc, unmerged})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Model{RBps: 2048 << 20, RSeqIOPS: 200000, RRandIOPS: 150000, WBps: 1024 << 20, WSeqIOPS: 100000, WRandIOPS: 50000}); d.Model != want {
		t.Errorf("model %+v, want %+v", d.Model, want)
	}
	if strings.Contains(strings.Join(d.Notes, "\n"), "merging on") {
		t.Errorf("notes %q", d.Notes)
	}
}
