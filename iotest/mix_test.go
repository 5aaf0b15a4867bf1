package iotest

import (
	"bufio"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

func mixPattern(t *testing.T, readPct int, bssplit, dist string) results.Pattern {
	t.Helper()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: readPct, QueueDepth: 1, Jobs: 1}
	p, err := pattern.WithBSSplit(p, bssplit)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = pattern.WithDistribution(p, dist); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Validate(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Over a million draws each size's share of its direction is within 1 %
// (relative) of the share asked, and every I/O lies inside the target at
// the smallest size's alignment.
func TestSizeMixShares(t *testing.T) {
	p := mixPattern(t, 70, "4k/60:16k/30:1m/10,4k/90:8k/10", "")
	if p.BlockSize != 1<<20 || p.BSSplit != "4k/60:16k/30:1m/10,4k/90:8k/10" {
		t.Fatalf("pattern %+v", p)
	}
	size := int64(1<<30) + 4096*3
	q := newSequence(5, 0, 0, p, size)
	want := [2]map[int64]float64{{4096: 60, 16384: 30, 1 << 20: 10}, {4096: 90, 8192: 10}}
	var got [2]map[int64]int
	got[0], got[1] = map[int64]int{}, map[int64]int{}
	var dirs [2]int
	const n = 1_000_000
	for range n {
		write, off, bs, kind := q.draw()
		if q.mix.sizes[kind&kindSize] != bs {
			t.Fatalf("kind %d is not size %d", kind, bs)
		}
		if off%4096 != 0 || off < 0 || off+bs > size {
			t.Fatalf("I/O of %d at %d outside the target of %d or unaligned", bs, off, size)
		}
		d := 0
		if write {
			d = 1
		}
		dirs[d]++
		got[d][bs]++
	}
	for d := range want {
		for bs, pct := range want[d] {
			share := float64(got[d][bs]) * 100 / float64(dirs[d])
			if math.Abs(share-pct) > pct/100 {
				t.Errorf("direction %d, size %d: %.3f%% of %d I/Os, want %.0f%% ± 1%%", d, bs, share, dirs[d], pct)
			}
		}
		if len(got[d]) != len(want[d]) {
			t.Errorf("direction %d drew sizes %v, want only %v", d, got[d], want[d])
		}
	}
}

// A pattern of one size and uniform offsets draws the same sequence
// whether or not a table is in the way: existing results repeat.
func TestSingleSizeSequenceUnchanged(t *testing.T) {
	p := mixPattern(t, 50, "4k/100", "uniform")
	if p.BSSplit != "" || p.Distribution != "" || p.Name() != "rand-4k-r50-qd1" {
		t.Fatalf("4k/100 uniform is not the plain pattern: %+v %s", p, p.Name())
	}
	if q := newSequence(1, 0, 0, p, 1<<30); q.mix != nil {
		t.Fatal("a plain pattern got a mix table")
	}
}

// chiSquareHomogeneity is Pearson's chi-square test that two samples of
// counts over the same bins come from one distribution: the statistic, its
// degrees of freedom, and the p-value (by the Wilson–Hilferty
// approximation, close for the hundreds of degrees of freedom here).
func chiSquareHomogeneity(a, b []float64) (x2 float64, df int, p float64) {
	var na, nb float64
	for i := range a {
		na, nb = na+a[i], nb+b[i]
	}
	ka, kb := math.Sqrt(nb/na), math.Sqrt(na/nb)
	for i := range a {
		if a[i]+b[i] == 0 {
			continue
		}
		d := a[i]*ka - b[i]*kb
		x2 += d * d / (a[i] + b[i])
		df++
	}
	df--
	k := float64(df)
	z := (math.Cbrt(x2/k) - (1 - 2/(9*k))) / math.Sqrt(2/(9*k))
	return x2, df, 0.5 * math.Erfc(z/math.Sqrt2)
}

// fioReference reads a fixture of fio's per-block counts (see its header).
func fioReference(t *testing.T, path string) (counts map[uint64]float64, total float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts = map[uint64]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if fields[0] == "total" {
			total = v
			continue
		}
		b, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		counts[b] = v
	}
	return counts, total
}

// Our zipf:1.2 loads the very blocks fio's does, as often: fio's offsets
// (its write_iolog, testdata/fio-zipf1.2-c0-1g-4k.txt) and ours over a
// 1 GiB target at 4k with the center at 0 (so both rotations are 0) pass
// Pearson's chi-square test of homogeneity over every block fio hit 20
// times or more plus one bin for all the others.
func TestZipfMatchesFio(t *testing.T) {
	ref, total := fioReference(t, "testdata/fio-zipf1.2-c0-1g-4k.txt")
	p := mixPattern(t, 100, "", "zipf:1.2:0")
	ours := drawBlocks(newSequence(11, 0, 0, p, 1<<30), int(total))
	a, b := binned(ours, ref, total)
	x2, df, pv := chiSquareHomogeneity(a, b)
	t.Logf("chi-square %.1f over %d degrees of freedom, p = %.3f (%d bins)", x2, df, pv, len(a))
	if pv < 0.001 {
		t.Errorf("our zipf:1.2 differs from fio's: chi-square %.1f, %d df, p = %.2g", x2, df, pv)
	}
	// A test that could not tell: a uniform draw must fail it.
	u := drawBlocks(newSequence(11, 0, 0, mixPattern(t, 100, "", "pareto:0.3:0"), 1<<30), int(total))
	a, b = binned(u, ref, total)
	if _, _, pv := chiSquareHomogeneity(a, b); pv > 1e-6 {
		t.Errorf("pareto:0.3 passes as fio's zipf:1.2 (p = %.2g): the test cannot tell", pv)
	}
}

// Without a center the hot set turns by a rotation drawn from the seed
// (fio's is drawn from its own), so compare what does not depend on it:
// the rank-frequency curve, the counts of the 200 hottest blocks sorted,
// plus the rest, by the same chi-square test.
func TestZipfRankFrequencyMatchesFio(t *testing.T) {
	ref, total := fioReference(t, "testdata/fio-zipf1.2-c0-1g-4k.txt")
	p := mixPattern(t, 100, "", "zipf:1.2")
	ours := drawBlocks(newSequence(12, 0, 0, p, 1<<30), int(total))
	top := func(m map[uint64]float64) []float64 {
		var v []float64
		for _, c := range m {
			v = append(v, c)
		}
		slices.Sort(v)
		slices.Reverse(v)
		v = v[:200]
		var sum float64
		for _, c := range v {
			sum += c
		}
		return append(v, total-sum)
	}
	x2, df, pv := chiSquareHomogeneity(top(ours), top(ref))
	t.Logf("rank-frequency chi-square %.1f over %d degrees of freedom, p = %.3f", x2, df, pv)
	if pv < 0.001 {
		t.Errorf("our zipf:1.2 rank-frequency differs from fio's: p = %.2g", pv)
	}
	// A test that could not tell: a slightly different theta must fail it.
	other := drawBlocks(newSequence(12, 0, 0, mixPattern(t, 100, "", "zipf:1.1"), 1<<30), int(total))
	if _, _, pv := chiSquareHomogeneity(top(other), top(ref)); pv > 1e-6 {
		t.Errorf("zipf:1.1 passes as fio's zipf:1.2 (p = %.2g): the test cannot tell", pv)
	}
}

func drawBlocks(q *sequence, n int) map[uint64]float64 {
	m := map[uint64]float64{}
	for range n {
		_, off := q.next()
		m[uint64(off/4096)]++
	}
	return m
}

// binned puts ours and fio's counts in the fixture's bins plus the rest.
func binned(ours, ref map[uint64]float64, total float64) (a, b []float64) {
	var sa, sb float64
	for blk, c := range ref {
		a, b = append(a, ours[blk]), append(b, c)
		sa, sb = sa+ours[blk], sb+c
	}
	var na float64
	for _, c := range ours {
		na += c
	}
	return append(a, na-sa), append(b, total-sb)
}

// Pareto's hot set is wherever its density peaks: the highest ranks for
// h above 0.5, the lowest below (pareto:0.9 is fio's 80/20-like skew).
func TestParetoHotSet(t *testing.T) {
	for _, c := range []struct {
		dist  string
		least float64
	}{{"pareto:0.9", 0.89}, {"pareto:0.3", 0.49}} { // analytically 0.90 and 0.505
		q := newSequence(3, 0, 0, mixPattern(t, 100, "", c.dist), 1<<30)
		hot := 0
		const n = 100_000
		for range n {
			if _, _, _, kind := q.draw(); kind&kindHot10 != 0 {
				hot++
			}
		}
		if share := float64(hot) / n; share < c.least {
			t.Errorf("%s: %.3f of the I/Os in the hottest 10 %%, want at least %.2f", c.dist, share, c.least)
		}
	}
}

// The hot-set counts agree with the blocks drawn: under zipf:1.2 the
// hottest 1 % of ranks take most I/Os, and the 10 % more.
func TestHotSetCounted(t *testing.T) {
	p := mixPattern(t, 100, "", "zipf:1.2")
	q := newSequence(3, 0, 0, p, 1<<30)
	var hot1, hot10 int
	const n = 200_000
	for range n {
		_, _, _, kind := q.draw()
		if kind&kindHot1 != 0 {
			hot1++
			if kind&kindHot10 == 0 {
				t.Fatal("hot 1 % outside the hot 10 %")
			}
		}
		if kind&kindHot10 != 0 {
			hot10++
		}
	}
	// Gray's approximation at theta 1.2 over 262,144 ranks.
	if s1, s10 := float64(hot1)/n, float64(hot10)/n; s1 < 0.7 || s10 < s1 || s10 > 0.99 {
		t.Errorf("hot 1 %%: %.3f, hot 10 %%: %.3f", s1, s10)
	}
}

// Every distribution stays inside the target and repeats for a seed.
func TestDistributionsInRange(t *testing.T) {
	for _, d := range []string{"zipf:0.8", "zipf:1.2:0.5", "pareto:0.9", "normal:5", "normal:20:0.25", "normal:0"} {
		p := mixPattern(t, 50, "4k/50:64k/50", d)
		size := int64(64<<20) + 8192
		a, b := newSequence(4, 1, 0, p, size), newSequence(4, 1, 0, p, size)
		for range 50_000 {
			wa, oa, sa, _ := a.draw()
			wb, ob, sb, _ := b.draw()
			if wa != wb || oa != ob || sa != sb {
				t.Fatalf("%s: the same seed gave different I/Os", d)
			}
			if oa < 0 || oa+sa > size || oa%4096 != 0 {
				t.Fatalf("%s: I/O of %d at %d outside %d", d, sa, oa, size)
			}
		}
	}
}
