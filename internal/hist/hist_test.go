package hist

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIndexRoundTrip(t *testing.T) {
	// Every value maps to a bucket whose bounds contain it, and buckets are
	// narrow enough for < 1 % error from 1 µs to 10 s.
	for _, v := range []uint64{0, 1, 127, 128, 129, 1000, 4095, 4096, 1e6, 123456789, 1e10, MaxValue} {
		i := Index(v)
		lo, hi := Bounds(i)
		if v < lo || v > hi {
			t.Errorf("value %d in bucket %d [%d, %d]", v, i, lo, hi)
		}
		if v >= 1000 && float64(hi-lo)/2 > 0.01*float64(v) {
			t.Errorf("bucket of %d is [%d, %d]: error above 1%%", v, lo, hi)
		}
	}
	if Index(MaxValue) != Buckets-1 {
		t.Fatalf("largest value in bucket %d of %d", Index(MaxValue), Buckets)
	}
	// Buckets tile the values: each starts one past the end of the last.
	for i := 1; i < Buckets; i++ {
		_, prev := Bounds(i - 1)
		if lo, _ := Bounds(i); lo != prev+1 {
			t.Fatalf("bucket %d starts at %d, bucket %d ends at %d", i, lo, i-1, prev)
		}
	}
}

// fio's io_u_plat buckets (stat.c, FIO_IO_U_PLAT_BITS 6, 29 groups) are
// these: the value fio prints for its bucket i (plat_idx_to_val: i below
// 128, else the group's base plus (k + 0.5) sub-bucket widths) falls in
// bucket i here, and fio's bucket of a value (plat_val_to_idx) is Index's.
func TestBucketsAreFios(t *testing.T) {
	const bits, groups = 6, 29
	fioValue := func(i int) uint64 {
		if i < 2<<bits {
			return uint64(i)
		}
		errBits := i>>bits - 1
		base := uint64(1) << (errBits + bits)
		k := float64(i % (1 << bits))
		return base + uint64((k+0.5)*float64(uint64(1)<<errBits))
	}
	fioIndex := func(v uint64) int {
		msb := 0
		for x := v; x > 1; x >>= 1 {
			msb++
		}
		if msb <= bits {
			return int(v)
		}
		errBits := msb - bits
		return min((errBits+1)<<bits+int(v>>errBits)&(1<<bits-1), groups<<bits-1)
	}
	for i := range groups << bits {
		v := fioValue(i)
		if got := Index(v); got != i {
			t.Fatalf("fio's bucket %d (value %d) is bucket %d here", i, v, got)
		}
		lo, hi := Bounds(i)
		for _, w := range []uint64{lo, hi, v} {
			if fioIndex(w) != Index(w) {
				t.Fatalf("value %d: fio's bucket %d, here %d", w, fioIndex(w), Index(w))
			}
		}
	}
}

// distributions draws latencies, in ns, from several shapes a disk shows.
var distributions = map[string]func(r *rand.Rand) float64{
	"log-uniform 1µs-10s": func(r *rand.Rand) float64 {
		return math.Exp(math.Log(1e3) + r.Float64()*(math.Log(1e10)-math.Log(1e3)))
	},
	"uniform 50-150µs":  func(r *rand.Rand) float64 { return 50e3 + r.Float64()*100e3 },
	"exponential 200µs": func(r *rand.Rand) float64 { return r.ExpFloat64() * 200e3 },
	"lognormal 80µs":    func(r *rand.Rand) float64 { return math.Exp(math.Log(80e3) + 0.6*r.NormFloat64()) },
	"bimodal 20µs/3ms": func(r *rand.Rand) float64 {
		if r.Float64() < 0.97 {
			return 20e3 + r.NormFloat64()*2e3
		}
		return 3e6 + r.NormFloat64()*300e3
	},
	"sub-µs 0-500ns": func(r *rand.Rand) float64 { return r.Float64() * 500 },
}

// The acceptance: p50, p99 and p99.9 of a histogram lie within one
// bucket's width of the exact nearest-rank percentile of the same values.
func TestPercentileWithinABucket(t *testing.T) {
	for name, draw := range distributions {
		r := rand.New(rand.NewPCG(3, 4))
		var h Histogram
		vals := make([]uint64, 0, 100_000)
		for range 100_000 {
			v := uint64(max(0, draw(r)))
			h.Record(int64(v))
			vals = append(vals, v)
		}
		slices.Sort(vals)
		worst := 0.0
		for _, q := range []float64{50, 99, 99.9} {
			exact := vals[int(math.Ceil(q/100*float64(len(vals))))-1]
			got := h.Percentile(q)
			lo, hi := Bounds(Index(exact))
			width := hi - lo + 1
			diff := max(got, exact) - min(got, exact)
			if 2*diff > width { // half a bucket, in fact: the value is its middle
				t.Errorf("%s: p%v = %d, exact %d: %d apart, the bucket is %d wide", name, q, got, exact, diff, width)
			}
			worst = max(worst, float64(diff)/float64(width))
		}
		t.Logf("%s: p50, p99, p99.9 at most %.2f of a bucket's width from the exact", name, worst)
		if h.Count() != uint64(len(vals)) || h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
			t.Errorf("%s: count %d min %d max %d", name, h.Count(), h.Min(), h.Max())
		}
	}
}

func TestKnownDistribution(t *testing.T) {
	// 1..1000 µs, each once: pN is N% of the way up.
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(int64(i) * 1000)
	}
	for q, want := range map[float64]float64{50: 500e3, 90: 900e3, 99: 990e3, 100: 1000e3} {
		if got := float64(h.Percentile(q)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("p%v = %.0f, want %.0f ± 1%%", q, got, want)
		}
	}
	if m := h.Mean(); m != 500500 {
		t.Errorf("mean %v, want 500500", m)
	}
	var empty Histogram
	if empty.Percentile(50) != 0 || empty.Mean() != 0 || empty.Compact() != nil {
		t.Error("an empty histogram has figures")
	}
}

// The merged histogram of two sets of values is the histogram of their
// union, bucket by bucket, and merging leaves the merged-in one alone.
func TestMergeIsTheUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var a, b, union Histogram
	for name, draw := range distributions {
		for i := range 20_000 {
			v := int64(draw(r))
			if i%3 == 0 {
				a.Record(v)
			} else {
				b.Record(v)
			}
			union.Record(v)
		}
		merged, bBefore := a, b
		merged.Merge(&b)
		if !merged.Equal(&union) {
			t.Errorf("after %s: merged histogram differs from the union's", name)
		}
		if !b.Equal(&bBefore) {
			t.Errorf("after %s: merging changed the merged-in histogram", name)
		}
	}
	var empty Histogram
	merged := empty
	merged.Merge(&union)
	if !merged.Equal(&union) {
		t.Error("merged into an empty histogram: not the same")
	}
}

// The compact form goes through JSON and comes back bucket for bucket.
func TestCompactRoundTrip(t *testing.T) {
	for name, draw := range distributions {
		r := rand.New(rand.NewPCG(5, 6))
		var h Histogram
		for range 50_000 {
			h.Record(int64(draw(r)))
		}
		h.Record(int64(MaxValue) + 5) // clamped, a long run of empty buckets before it
		data, err := json.Marshal(h.Compact())
		if err != nil {
			t.Fatal(err)
		}
		var c Compact
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		back, err := c.Histogram(h.Count(), h.Min(), h.Max())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !back.Equal(&h) {
			t.Errorf("%s: the histogram read back differs", name)
		}
		t.Logf("%s: %d bytes", name, len(data))
	}
}

func TestCompactRefused(t *testing.T) {
	var h Histogram
	for _, v := range []int64{100, 1000, 1000, 5000} {
		h.Record(v)
	}
	good := *h.Compact()
	if _, err := good.Histogram(4, 100, 5000); err != nil {
		t.Fatalf("good: %v", err)
	}
	for name, c := range map[string]func(c *Compact) (uint64, uint64, uint64){
		"scheme":        func(c *Compact) (uint64, uint64, uint64) { c.Scheme = "hdr"; return 4, 100, 5000 },
		"count":         func(c *Compact) (uint64, uint64, uint64) { return 5, 100, 5000 },
		"min elsewhere": func(c *Compact) (uint64, uint64, uint64) { return 4, 90, 5000 },
		"max elsewhere": func(c *Compact) (uint64, uint64, uint64) { return 4, 100, 6000 },
		"zero count": func(c *Compact) (uint64, uint64, uint64) {
			c.Runs = append([]int64{1, 0}, c.Runs[1:]...)
			return 4, 100, 5000
		},
		"ends empty":   func(c *Compact) (uint64, uint64, uint64) { c.Runs = append(c.Runs, -3); return 4, 100, 5000 },
		"past the end": func(c *Compact) (uint64, uint64, uint64) { c.First = Buckets - 1; return 4, 100, 5000 },
		"sum":          func(c *Compact) (uint64, uint64, uint64) { c.Sum = 1; return 4, 100, 5000 },
	} {
		bad := good
		bad.Runs = slices.Clone(good.Runs)
		n, lo, hi := c(&bad)
		if _, err := bad.Histogram(n, lo, hi); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

func TestFromCounts(t *testing.T) {
	var h Histogram
	counts := map[int]uint64{}
	for _, v := range []int64{3, 700, 700, 90_000, 2_000_000} {
		h.Record(v)
		counts[Index(uint64(v))]++
	}
	got, err := FromCounts(counts, h.Sum(), h.Min(), h.Max())
	if err != nil || !got.Equal(&h) {
		t.Fatalf("from counts: %v", err)
	}
	if _, err := FromCounts(map[int]uint64{Buckets: 1}, 0, 0, 0); err == nil {
		t.Error("a bucket past the last read without an error")
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	h.Touch()
	v := int64(12_345)
	for b.Loop() {
		h.Record(v)
		v = v*1103515245&(1<<30-1) + 1000
	}
}

func TestRunsJSON(t *testing.T) {
	data, err := json.Marshal(Compact{Scheme: Scheme, Sum: 9, First: 3, Runs: Runs{2, -4, 1}})
	if err != nil || string(data) != `{"scheme":"log-linear-64","sum":9,"first":3,"counts":"2 -4 1"}` {
		t.Fatalf("%s, %v", data, err)
	}
	var c Compact
	for _, bad := range []string{`{"counts":[2,1]}`, `{"counts":"2 x"}`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s read without an error", bad)
		}
	}
}
