package report

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
)

func res(access iotest.Access, bs int64, read, qd, jobs int, iops, mibs float64) iotest.Result {
	p := iotest.Pattern{Access: access, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: jobs}
	return iotest.Result{Name: p.Name(), Pattern: p, Total: iotest.Total{IOPS: iops, MiBPerS: mibs}}
}

func TestBuildPivots(t *testing.T) {
	rs := []iotest.Result{
		res(iotest.Random, 4096, 100, 32, 1, 100000, 0),
		res(iotest.Random, 4096, 0, 1, 1, 9000, 0),
		res(iotest.Random, 4096, 100, 1, 1, 12000, 0),
		// 0 % reads at QD32 is missing: an empty cell, not 0.
		res(iotest.Random, 16384, 70, 1, 8, 30000, 0),
		res(iotest.Sequential, 1<<20, 100, 8, 1, 1800, 1800),
		res(iotest.Sequential, 1<<20, 0, 8, 1, 2200, 2200),
	}
	m := Build(rs)
	if len(m.Tables) != 3 {
		t.Fatalf("%d tables", len(m.Tables))
	}
	r4 := m.Tables[0]
	if r4.Title != "random 4KiB IOPS" || strings.Join(r4.Rows, ",") != "read,write" || strings.Join(r4.Cols, ",") != "QD1,QD32" {
		t.Fatalf("table %+v", r4)
	}
	if *r4.Cells[0][0] != 12000 || *r4.Cells[0][1] != 100000 || *r4.Cells[1][0] != 9000 || r4.Cells[1][1] != nil {
		t.Errorf("cells %v", r4.Cells)
	}
	if m.Tables[1].Title != "random 16KiB IOPS, 8 jobs" || m.Tables[1].Rows[0] != "70% read" {
		t.Errorf("jobs table %+v", m.Tables[1])
	}
	seq := m.Tables[2]
	if seq.Title != "sequential MiB/s" || strings.Join(seq.Cols, ",") != "1M QD8" || *seq.Cells[1][0] != 2200 {
		t.Errorf("sequential %+v", seq)
	}
	var b strings.Builder
	if err := WriteText(&b, m); err != nil {
		t.Fatal(err)
	}
	want := `random 4KiB IOPS
          QD1     QD32
read   12,000  100,000
write   9,000         

random 16KiB IOPS, 8 jobs
             QD1
70% read  30,000

sequential MiB/s
       1M QD8
read    1,800
write   2,200
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}
