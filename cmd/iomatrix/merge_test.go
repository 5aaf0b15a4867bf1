package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

var fleetFiles = []string{"../../report/testdata/fleet/node-a.json", "../../report/testdata/fleet/node-b.json", "../../report/testdata/fleet/node-c.json"}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "fleet.json")
	r := runInProcess(append([]string{"merge", "-o", out}, fleetFiles...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "fleet of 3 members: node-a, node-b, node-c") || strings.Count(r.stdout, "OUTLIER") != 2 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "fleet of 3 members, 14 cells, written to "+out) {
		t.Errorf("stderr %q", r.stderr)
	}
	// The fleet document is a results file for report and compare.
	if r := runInProcess("report", out, "--format", "markdown", "--outlier", "25%"); r.code != 0 || strings.Contains(r.stdout, "| OUTLIER") ||
		!strings.Contains(r.stdout, "more than 25 % below") {
		t.Errorf("report of the fleet, outlier 25 %%: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runInProcess("compare", fleetFiles[0], out); r.code != 0 || !strings.Contains(r.stdout, "14 patterns compared") {
		t.Errorf("compare with the fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	labelled := runInProcess(append([]string{"merge", "--label", "gp3", "--label", "io2", "--label", "st1", "--format", "csv"}, fleetFiles...)...)
	if labelled.code != 0 || !strings.HasPrefix(labelled.stdout, "member,name,") || !strings.Contains(labelled.stdout, "\nst1,") {
		t.Errorf("labelled CSV: exit %d\n%.300s%s", labelled.code, labelled.stdout, labelled.stderr)
	}
}

func TestMergeBadInput(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.json")
	if r := runInProcess(append([]string{"merge", "-o", fleet}, fleetFiles...)...); r.code != 0 {
		t.Fatal(r.stderr)
	}
	out := filepath.Join(dir, "never.json")
	twin := filepath.Join(dir, "twin.json")
	data, err := os.ReadFile(fleetFiles[0])
	testenv.Must(t, err)
	testenv.Must(t, os.WriteFile(twin, data, 0o644))
	for _, c := range []struct {
		name    string
		args    []string
		mention string
	}{
		{"one file", []string{"merge", fleetFiles[0]}, "needs two results files or more (got 1)"},
		{"labels", []string{"merge", "--label", "x", fleetFiles[0], fleetFiles[1]}, "--label: 1 given for 2 files"},
		{"outlier", []string{"merge", "--outlier", "lots", fleetFiles[0], fleetFiles[1]}, `--outlier: "lots" is not a percentage`},
		{"format", []string{"merge", "--format", "xlsx", fleetFiles[0], fleetFiles[1]}, "--format"},
		{"metric", []string{"merge", "--metric", "x", fleetFiles[0], fleetFiles[1]}, "--metric"},
		{"missing file", []string{"merge", fleetFiles[0], filepath.Join(dir, "no.json")}, "no.json"},
		{"a fleet", []string{"merge", fleetFiles[0], fleet}, "is a fleet document already"},
		{"same file twice", []string{"merge", fleetFiles[0], fleetFiles[0]}, "given twice: its results would count twice"},
		{"same host and target", []string{"merge", fleetFiles[0], twin}, "give each member a --label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(append(c.args, "-o", out)...), c.mention)
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a refused merge wrote its output")
	}
}

// Two runs' files merged: each cell's latency over the fleet is the
// histogram of the union of both runs' latencies.
func TestMergeUnionOfHistograms(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 12))
	var union [2]hist.Histogram // read, write
	var files []string
	for n, host := range []string{"node-a", "node-b"} {
		var rd, wr hist.Histogram
		for range 3000 + 2000*n {
			v := int64(math.Exp(math.Log(20e3)+0.8*r.NormFloat64())) * int64(n+1)
			rd.Record(v)
			wr.Record(3 * v)
			union[0].Record(v)
			union[1].Record(3 * v)
		}
		doc := results.NewDocument(results.TargetInfo{Path: "/mnt/x", Kind: "file"}, results.Settings{Profile: "quick"}, "2026-01-01T00:00:00Z")
		doc.Host.Hostname = host
		doc.Results = []results.Result{{Name: "rand-4k-r50-qd1",
			Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 1, Jobs: 1},
			Read:    results.DirStats{IOs: rd.Count(), IOPS: 100, LatNS: results.Summarize(&rd)},
			Write:   results.DirStats{IOs: wr.Count(), IOPS: 100, LatNS: results.Summarize(&wr)},
			Total:   results.Total{IOs: rd.Count() + wr.Count(), IOPS: 200}}}
		path := filepath.Join(dir, host+".json")
		testenv.Must(t, results.WriteFileAtomic(path, doc))
		files = append(files, path)
	}
	out := filepath.Join(dir, "fleet.json")
	if res := runInProcess(append([]string{"merge", "-o", out}, files...)...); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	fleet, err := results.ReadResultsFile(out)
	testenv.Must(t, err)
	f := fleet.Results[0].Fleet
	for i, l := range []*results.Latency{f.ReadLatNS, f.WriteLatNS} {
		h, err := l.Histogram()
		if err != nil || h == nil || !h.Equal(&union[i]) {
			t.Fatalf("direction %d: the merged histogram is not the union's (%v)", i, err)
		}
		if l.Figures() != results.Summarize(&union[i]).Figures() {
			t.Errorf("direction %d: merged figures %+v, the union's %+v", i, l.Figures(), results.Summarize(&union[i]).Figures())
		}
	}
	t.Logf("read p99 over the fleet %d ns of %d I/Os", f.ReadLatNS.P99, f.ReadLatNS.Count)
}
