package burst_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The burst command on the stand-ins of cloud volumes and SSD caches
// (internal/testenv's credit buckets behind a loop device), whose
// parameters the test sets: the command finds each one's figures.

// iomatrix builds the command once for the package's tests.
func iomatrix(t *testing.T) string {
	t.Helper()
	goTool := testenv.Command(t, "go")
	bin := filepath.Join(t.TempDir(), "iomatrix")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/iomatrix/iomatrix/cmd/iomatrix").CombinedOutput(); err != nil {
		t.Fatalf("build iomatrix: %v\n%s", err, out)
	}
	return bin
}

// burstOn runs iomatrix burst on dev and reads its document.
func burstOn(t *testing.T, bin, dev string, args ...string) *results.Burst {
	t.Helper()
	dir := t.TempDir()
	out, chart := filepath.Join(dir, "burst.json"), filepath.Join(dir, "burst.svg")
	cmd := exec.Command(bin, append([]string{"burst", dev, "--out", out, "--chart", chart}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	t.Logf("iomatrix burst %s %s: %v in %s\n%s", dev, strings.Join(args, " "), err, time.Since(began).Round(time.Second), stderr.String())
	if err != nil {
		t.Fatalf("iomatrix burst: %v", err)
	}
	data, err := os.ReadFile(out)
	testenv.Must(t, err)
	var d results.Burst
	testenv.Must(t, json.Unmarshal(data, &d))
	if !bytes.Equal(bytes.TrimSpace(stdout.Bytes()), bytes.TrimSpace(data)) && bytes.HasPrefix(stdout.Bytes(), []byte("{")) {
		t.Errorf("--format json printed another document than --out saved")
	}
	t.Logf("%s: %s", d.Verdict, d.Summary)
	svg, err := os.ReadFile(chart)
	testenv.Must(t, err)
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("step at")) {
		t.Errorf("the chart %s is not an SVG with the step marked", chart)
	}
	return &d
}

// within reports a figure further than tol (a share) from want.
func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	dev := got/want - 1
	t.Logf("%s: %.1f, the stand-in's %.1f (%+.1f %%)", name, got, want, 100*dev)
	if math.Abs(dev) > tol {
		t.Errorf("%s: %.1f, want %.1f within %g %%", name, got, want, 100*tol)
	}
}

// A volume's IOPS credits (a baseline b, K credits above it, a peak B):
// the burst rate, its duration K/(B-b), the baseline and the bucket each
// within 5 % of the parameters, the refill after an idle time within
// 10 % of b, and the bucket told an IOPS bucket. B is 1,500, not the
// issue's 3,000: the stand-in serves from this process, which CI runs
// under the race detector, where 3,000 IOPS is most of what it can do
// (4,000-8,000 IOPS) on a machine other tests keep busy.
//
// IOMATRIX_BURST_BUCKET=B,b,K,IDLE sets other values (the issue's:
// 3000,300,60000,30s).
func TestBurstCreditBucket(t *testing.T) {
	peak, base, credits, idle := 1500, 150, 15000, 15*time.Second
	if v := os.Getenv("IOMATRIX_BURST_BUCKET"); v != "" {
		f := strings.Split(v, ",")
		ok := len(f) == 4
		for i, p := range []*int{&peak, &base, &credits} {
			var err error
			if ok {
				*p, err = strconv.Atoi(f[i])
				ok = err == nil
			}
		}
		if ok {
			var err error
			idle, err = time.ParseDuration(f[3])
			ok = err == nil
		}
		if !ok {
			t.Fatalf("IOMATRIX_BURST_BUCKET=%s: want B,b,K,IDLE (3000,300,60000,30s)", v)
		}
	}
	bin := iomatrix(t)
	_, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{Size: 1 << 30, IOPS: base, Burst: credits, PeakIOPS: peak})
	d := burstOn(t, bin, dev, "--refill", idle.String(), "--max-runtime", "2m", "--format", "json")
	if d.Verdict != "step" || d.Step == nil {
		t.Fatalf("verdict %s (%s); want a step", d.Verdict, d.Summary)
	}
	s := d.Step
	within(t, "burst IOPS", s.BurstIOPS, float64(peak), 0.05)
	within(t, "baseline IOPS", s.BaselineIOPS, float64(base), 0.05)
	within(t, "burst seconds", time.Duration(s.DurationNS).Seconds(), float64(credits)/float64(peak-base), 0.05)
	within(t, "bucket I/Os", s.BucketIOs, float64(credits), 0.05)
	within(t, "bucket bytes", s.BucketBytes, float64(credits)*4096, 0.05)
	if p := d.Probe; p == nil || p.Bucket != results.BucketIOPS {
		t.Errorf("probe %+v; want an IOPS bucket", p)
	}
	if r := d.Refill; r == nil || !r.Found {
		t.Errorf("refill %+v; want a second step", r)
	} else {
		within(t, "refill IOPS", r.IOPS, float64(base), 0.10)
	}
}

// A volume with a fast write cache (writes at F until X bytes are
// written from an empty cache, then at the rate S it drains): the fast
// stretch within 10 % of X, both write rates within 5 %, and the bucket
// told a bandwidth bucket (it counts bytes, not writes).
func TestBurstWriteCache(t *testing.T) {
	const stretch, fast, slow = 256 << 20, 32 << 20, 8 << 20
	bin := iomatrix(t)
	_, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{Size: 1 << 30, WriteBandwidth: testenv.WriteCache(stretch, fast, slow)})
	d := burstOn(t, bin, dev, "--pattern", "write:64k:8", "--allow-destructive", "--max-runtime", "2m", "--format", "json")
	if d.Verdict != "step" || d.Step == nil {
		t.Fatalf("verdict %s (%s); want a step", d.Verdict, d.Summary)
	}
	s := d.Step
	within(t, "fast stretch bytes", s.BurstBytes, stretch, 0.10)
	within(t, "fast write B/s", s.BurstBPS, fast, 0.05)
	within(t, "slow write B/s", s.BaselineBPS, slow, 0.05)
	if p := d.Probe; p == nil || p.Bucket != results.BucketBandwidth {
		t.Errorf("probe %+v; want a bandwidth bucket", p)
	}
}

// A sweep told the volume's burst, on a credit bucket filled again after
// burst measured it: the cells measured while its sentinels found the
// volume above the baseline are marked bursting, none device_changed,
// the reference is the first run at the baseline, and fit judges on the
// baseline cells and says so.
func TestSweepMarksBursting(t *testing.T) {
	const peak, base, credits = 1500, 150, 15000
	bin := iomatrix(t)
	disk, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{Size: 1 << 30, IOPS: base, Burst: credits, PeakIOPS: peak})
	dir := t.TempDir()
	bf := filepath.Join(dir, "burst.json")
	d := burstOn(t, bin, dev, "--probe", "0", "--max-runtime", "1m", "--format", "json")
	if d.Step == nil {
		t.Fatalf("burst: %s", d.Summary)
	}
	testenv.Must(t, results.WriteBurstFile(bf, d))
	disk.Bucket().Fill() // as a long idle spell would
	out := filepath.Join(dir, "sweep.json")
	cmd := exec.Command(bin, "sweep", dev, "--profile", "quick", "--runtime", "1s", "--ramp", "0", "--sentinel-every", "2s",
		"--burst", bf, "--allow-destructive", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	t.Logf("iomatrix sweep --burst: %v\n%s", err, stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := results.ReadResultsFile(out)
	testenv.Must(t, err)
	s := doc.Sentinels
	if s == nil || s.Burst == nil || len(s.Runs) < 3 {
		t.Fatalf("sentinels %+v; want runs told the burst", s)
	}
	firstBase := time.Time{}
	for i, r := range s.Runs {
		t.Logf("run %d at %s: %.0f IOPS, %s", i, r.StartedAt, r.Total.IOPS, r.Level)
		if r.Level == results.LevelReference {
			firstBase, _ = time.Parse(time.RFC3339Nano, r.StartedAt)
		}
	}
	if s.Runs[0].Level != results.LevelBursting || firstBase.IsZero() {
		t.Fatalf("the first run is %s and no run is the reference: want bursting, then the baseline's", s.Runs[0].Level)
	}
	bursting := 0
	for _, r := range doc.Results {
		at, _ := time.Parse(time.RFC3339Nano, r.StartedAt)
		t.Logf("%s at %s: %.0f IOPS, bursting %v, changed %v", r.Name, r.StartedAt, r.Total.IOPS, r.Bursting != nil, r.DeviceChanged != nil)
		if r.DeviceChanged != nil {
			t.Errorf("%s: marked device_changed; the burst's end is no change", r.Name)
		}
		if r.Bursting != nil {
			bursting++
			if at.After(firstBase) {
				t.Errorf("%s: marked bursting, measured after the first run at the baseline", r.Name)
			}
		}
	}
	if bursting == 0 {
		t.Error("no cell marked bursting")
	}
	fit := exec.Command(bin, "fit", out, "--need", "read=100,write=0,bs=4k")
	fitOut, _ := fit.CombinedOutput()
	t.Logf("iomatrix fit:\n%s", fitOut)
	if !bytes.Contains(fitOut, []byte("baseline figures")) {
		t.Error("fit does not say it judged on baseline figures")
	}
}
