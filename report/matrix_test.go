package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

func res(access results.Access, bs int64, read, qd, jobs int, iops, mibs float64) results.Result {
	p := results.Pattern{Access: access, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: jobs}
	return results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOPS: iops, MiBPerS: mibs}}
}

func TestBuildPivots(t *testing.T) {
	rs := []results.Result{
		res(results.Random, 4096, 100, 32, 1, 100000, 0),
		res(results.Random, 4096, 0, 1, 1, 9000, 0),
		res(results.Random, 4096, 100, 1, 1, 12000, 0),
		// 0 % reads at QD32 is missing: an empty cell, not 0.
		res(results.Random, 16384, 70, 1, 8, 30000, 0),
		res(results.Sequential, 1<<20, 100, 8, 1, 1800, 1800),
		res(results.Sequential, 1<<20, 0, 8, 1, 2200, 2200),
	}
	m := Build(rs)
	if len(m.Tables) != 3 {
		t.Fatalf("%d tables", len(m.Tables))
	}
	r4 := m.Tables[0]
	if r4.Title != "random 4KiB IOPS" || strings.Join(r4.Rows, ",") != "read,write" || strings.Join(r4.Cols, ",") != "QD1,QD32" {
		t.Fatalf("table %+v", r4)
	}
	if r4.Cells[0][0].Value != 12000 || r4.Cells[0][1].Value != 100000 || r4.Cells[1][0].Value != 9000 || r4.Cells[1][1] != nil {
		t.Errorf("cells %v", r4.Cells)
	}
	if m.Tables[1].Title != "random 16KiB IOPS" || m.Tables[1].Rows[0] != "70% read" || m.Tables[1].Cols[0] != "QD1×8" {
		t.Errorf("jobs table %+v", m.Tables[1])
	}
	seq := m.Tables[2]
	if !r4.Cells[0][0].CDM || !r4.Cells[1][0].CDM || m.Tables[1].Cells[0][0].CDM {
		t.Error("CrystalDiskMark cells not marked")
	}
	if seq.Title != "sequential IOPS" || strings.Join(seq.Cols, ",") != "1M QD8" || seq.Cells[1][0].Value != 2200 {
		t.Errorf("sequential %+v", seq)
	}
}

// A block-size mix or a skew is a workload of its own: its table is not
// the plain block size's, even at the same largest size.
func TestMatrixMixTables(t *testing.T) {
	plain := results.Pattern{Access: results.Random, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 8, Jobs: 1}
	mixed, _ := pattern.WithBSSplit(plain, "4k/60:16k/30:1m/10")
	skewed, _ := pattern.WithDistribution(plain, "zipf:1.2")
	var rs []results.Result
	for i, p := range []results.Pattern{plain, mixed, skewed} {
		rs = append(rs, results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 1, IOPS: float64(100 * (i + 1))}})
	}
	m := Build(rs)
	var titles []string
	for _, tb := range m.Tables {
		titles = append(titles, tb.Title)
		if len(tb.Cells) != 1 || len(tb.Cells[0]) != 1 || tb.Cells[0][0] == nil {
			t.Fatalf("%s: cells %v", tb.Title, tb.Cells)
		}
	}
	want := []string{"random 1MiB IOPS", "random 1MiB zipf:1.2 IOPS", "random 4k/60:16k/30:1m/10 IOPS"}
	if !slices.Equal(titles, want) {
		t.Errorf("tables %q, want %q", titles, want)
	}
}

// Cells that differ by their data content alone never take one cell: a
// random table of their own, a column of their own in the sequential one.
func TestMatrixContentCells(t *testing.T) {
	var rs []results.Result
	for i, pct := range []int{0, 50} {
		for _, access := range []results.Access{results.Random, results.Sequential} {
			p := results.Pattern{Access: access, BlockSize: 4096, ReadPct: 0, QueueDepth: 8, Jobs: 1, Compress: pct}
			rs = append(rs, results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 1, IOPS: float64(100 * (i + 1))}})
		}
	}
	m := Build(rs)
	var titles, cols []string
	for _, tb := range m.Tables {
		titles = append(titles, tb.Title)
		cols = append(cols, tb.Cols...)
	}
	if want := []string{"random 4KiB IOPS", "random 4KiB compress 50 % IOPS", "sequential IOPS"}; !slices.Equal(titles, want) {
		t.Errorf("tables %q, want %q", titles, want)
	}
	if want := []string{"QD8", "QD8", "4K QD8", "4K QD8 (compress 50 %)"}; !slices.Equal(cols, want) {
		t.Errorf("columns %q, want %q", cols, want)
	}
}

// Durable writes are cells of their own: the commit profile's four modes
// of one size and queue depth never overwrite each other.
func TestMatrixSyncCells(t *testing.T) {
	var rs []results.Result
	for i, sync := range []string{"", "dsync", "fdatasync:1", "fsync:1"} {
		p := results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 1, Sync: sync}
		rs = append(rs, results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 1, IOPS: float64(100 * (i + 1))}})
		r := rs[len(rs)-1]
		r.Pattern.Access, r.Pattern.QueueDepth = results.Random, 8
		r.Name = r.Pattern.Name()
		rs = append(rs, r)
	}
	m := Build(rs)
	if len(m.Tables) != 5 {
		t.Fatalf("%d tables, want 4 random and 1 sequential", len(m.Tables))
	}
	seq := m.Tables[4]
	if want := "4K QD1,4K QD1 dsync,4K QD1 fdatasync:1,4K QD1 fsync:1"; strings.Join(seq.Cols, ",") != want {
		t.Fatalf("columns %q, want %q", seq.Cols, want)
	}
	for j, c := range seq.Cells[0] {
		if c == nil || c.Value != float64(100*(j+1)) {
			t.Errorf("cell %d: %+v", j, c)
		}
	}
	if m.Tables[1].Title != "random 4KiB dsync IOPS" {
		t.Errorf("random table %q", m.Tables[1].Title)
	}
}
