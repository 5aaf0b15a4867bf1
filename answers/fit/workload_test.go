package fit

import (
	"testing"
	"time"
)

// The workload's sum: IOPS added, the largest block size, concurrencies
// added (unknown if one is), the tightest bound; shares never exceed the
// cell and a direction a system does not use is held to 1.
func TestWorkloadSumAndShares(t *testing.T) {
	w, err := ParseWorkload("w.yaml", []byte(`systems:
  - {name: a, reads: 100, writes: 50, block_size: 8k, concurrency: 4, latency: "p99<5ms"}
  - {name: b, reads: 300, block_size: 16k, concurrency: 2, latency: "p99<2ms"}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := w.Sum()
	if s.ReadIOPS != 400 || s.WriteIOPS != 50 || s.BlockSize != 16384 || s.Concurrency != 6 ||
		len(s.Bounds) != 1 || s.Bounds[0].Max != 2*time.Millisecond {
		t.Errorf("sum %+v", s)
	}
	shares := w.Shares(Verdict{IOPS: 900})
	total := 0.0
	for _, sh := range shares {
		total += float64(sh.ReadIOPS + sh.WriteIOPS)
	}
	if shares[0].ReadIOPS != 200 || shares[0].WriteIOPS != 100 || shares[1].ReadIOPS != 600 || shares[1].WriteIOPS != 1 || total > 901 {
		t.Errorf("shares %+v", shares)
	}
}
