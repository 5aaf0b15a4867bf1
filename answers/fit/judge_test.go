package fit

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/results"
)

// cell is a measured random cell with a total p99.
func fitCell(bs int64, read, qd int, iops float64, p99us uint64) results.Result {
	p := results.Pattern{Access: results.Random, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: 1}
	return results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 1 << 20, IOPS: iops,
		LatNS: &results.Latency{P99: p99us * 1000, Count: 1 << 20}}}
}

// The lookup never takes a cell more favourable than the need: the next
// larger block size, the read share at or below, the concurrency at or
// below; without a concurrency, the best cell that meets the bounds.
func TestFitLookupIsConservative(t *testing.T) {
	rs := []results.Result{
		fitCell(4096, 100, 1, 10000, 200), fitCell(4096, 100, 32, 90000, 900),
		fitCell(4096, 50, 1, 8000, 300), fitCell(4096, 50, 32, 60000, 5000),
		fitCell(4096, 0, 1, 7000, 250), fitCell(4096, 0, 32, 50000, 800),
		fitCell(16384, 100, 1, 6000, 400), fitCell(16384, 50, 1, 5000, 500),
	}
	doc := &results.Document{Results: rs}
	for _, tc := range []struct {
		need string
		cell string
		fits bool
	}{
		{"read=9000,bs=4k,qd=1", "rand-4k-r100-qd1", true},
		{"read=6000,write=1000,bs=4k,qd=1", "rand-4k-r50-qd1", true},       // 86 % reads: the 50 % row
		{"read=6000,write=1000,bs=4k,qd=16", "rand-4k-r50-qd1", true},      // QD16 not measured: QD1 below it
		{"read=8000,write=1000,bs=4k,qd=64", "rand-4k-r50-qd32", true},     // QD32 at or below 64
		{"read=7000,bs=8k,qd=1", "rand-16k-r100-qd1", false},               // 8k not measured: 16k above it
		{"read=1000,write=1000,bs=4k,p99<1ms", "rand-4k-r50-qd1", true},    // QD32 is faster but misses the bound
		{"read=10000,write=10000,bs=4k,p99<1ms", "rand-4k-r50-qd1", false}, // no cell meets both: the bound first
		{"read=1000,write=1000,bs=4k,qd=32,p99<1ms", "rand-4k-r50-qd32", false},
	} {
		n, err := ParseNeed(tc.need)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Judge(doc, n)
		if err != nil {
			t.Fatalf("%s: %v", tc.need, err)
		}
		if v.Cell.Name != tc.cell || v.Fits != tc.fits {
			t.Errorf("%s: cell %s, fits %v (%s); want %s, %v", tc.need, v.Cell.Name, v.Fits, v.Why, tc.cell, tc.fits)
		}
	}
	for _, need := range []string{"read=1,bs=32k", "read=1,write=1000,bs=16k"} {
		n, _ := ParseNeed(need)
		if _, err := Judge(doc, n); !errors.Is(err, ErrCannotJudge) {
			t.Errorf("%s: %v, want ErrCannotJudge", need, err)
		}
	}
}

// A p99 on too few I/Os cannot prove a bound, however small it is.
func TestFitFewIOsProveNothing(t *testing.T) {
	c := fitCell(4096, 100, 1, 10000, 100)
	c.Total.IOs, c.Total.LatNS.Count = 500, 500
	n, _ := ParseNeed("read=100,bs=4k,qd=1,p99<10ms")
	v, err := Judge(&results.Document{Results: []results.Result{c}}, n)
	if err != nil || v.Fits {
		t.Errorf("fits %v, err %v: a p99 of 500 I/Os proved a bound", v.Fits, err)
	}
}

// JudgeFile judges a results file; a file that cannot be read, or whose
// cells cannot judge the need, is bad input naming the file.
func TestJudgeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	doc := results.NewDocument(results.TargetInfo{}, results.Settings{}, "")
	doc.Results = []results.Result{fitCell(4096, 100, 1, 10000, 200)}
	if err := results.WriteFileAtomic(path, doc); err != nil {
		t.Fatal(err)
	}
	n, _ := ParseNeed("read=100,bs=4k")
	got, v, err := JudgeFile(path, n)
	if err != nil || !v.Fits || v.Cell.Name != "rand-4k-r100-qd1" || len(got.Results) != 1 {
		t.Errorf("judged %+v: %v", v, err)
	}
	big, _ := ParseNeed("read=100,bs=64k")
	var ie *fault.InputError
	if _, _, err := JudgeFile(path, big); !errors.As(err, &ie) || !errors.Is(err, ErrCannotJudge) || !strings.HasPrefix(err.Error(), path+": "+ErrCannotJudge.Error()) {
		t.Errorf("a need the cells cannot judge: %v", err)
	}
	if _, _, err := JudgeFile(filepath.Join(dir, "none.json"), n); !errors.As(err, &ie) || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("no file: %v", err)
	}
}
