package iotest

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestRandomOffsetsInRangeAndAligned(t *testing.T) {
	for _, bs := range []int64{512, 4096, 16384, 1 << 20} {
		size := int64(1<<30) + 3*bs + 100 // not a multiple of bs: the tail is never addressed
		p := results.Pattern{Access: results.Random, BlockSize: bs, ReadPct: 50, QueueDepth: 1, Jobs: 1}
		q := newSequence(42, 0, 0, p, size)
		var lo, hi int64 = math.MaxInt64, 0
		for range 100_000 {
			_, off := q.next()
			if off%bs != 0 || off < 0 || off+bs > size {
				t.Fatalf("bs %d: offset %d out of range or unaligned", bs, off)
			}
			lo, hi = min(lo, off), max(hi, off)
		}
		// Uniform over the whole target: both ends are reached.
		if lo > size/100 || hi < size-size/100-bs {
			t.Errorf("bs %d: offsets span [%d, %d] of %d", bs, lo, hi, size)
		}
	}
}

func TestRandomOffsetsUniform(t *testing.T) {
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
	size := int64(4096 * 1000)
	q := newSequence(7, 0, 0, p, size)
	var buckets [10]int
	const n = 200_000
	for range n {
		_, off := q.next()
		buckets[off*10/size]++
	}
	for i, c := range buckets {
		if math.Abs(float64(c)-n/10) > n/10*0.03 {
			t.Errorf("decile %d has %d draws, want %d ± 3%%", i, c, n/10)
		}
	}
}

func TestReadShare(t *testing.T) {
	for _, pct := range []int{0, 1, 10, 50, 70, 90, 99, 100} {
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: pct, QueueDepth: 1, Jobs: 1}
		q := newSequence(uint64(pct)+1, 0, 0, p, 1<<30)
		const n = 100_000
		reads := 0
		for range n {
			if w, _ := q.next(); !w {
				reads++
			}
		}
		got := float64(reads) * 100 / n
		if math.Abs(got-float64(pct)) > 1 {
			t.Errorf("rwmix %d: %.2f%% reads over %d draws", pct, got, n)
		}
	}
}

func TestSeedRepeats(t *testing.T) {
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 4, Jobs: 2}
	a, b, c := newSequence(9, 1, 0, p, 1<<30), newSequence(9, 1, 0, p, 1<<30), newSequence(10, 1, 0, p, 1<<30)
	same := true
	for range 1000 {
		wa, oa := a.next()
		wb, ob := b.next()
		wc, oc := c.next()
		if wa != wb || oa != ob {
			t.Fatal("same seed gave different sequences")
		}
		if wa != wc || oa != oc {
			same = false
		}
	}
	if same {
		t.Error("different seeds gave the same sequence")
	}
	// Jobs of one run differ from each other.
	d := newSequence(9, 0, 0, p, 1<<30)
	_, o1 := d.next()
	e := newSequence(9, 1, 0, p, 1<<30)
	_, o2 := e.next()
	_, o3 := e.next()
	if o1 == o2 && o1 == o3 {
		t.Error("jobs share a sequence")
	}
}

func TestSequentialRegions(t *testing.T) {
	bs := int64(1 << 20)
	size := int64(64 << 20)
	p := results.Pattern{Access: results.Sequential, BlockSize: bs, ReadPct: 100, QueueDepth: 8, Jobs: 4}
	for j := range 4 {
		q := newSequence(1, j, 0, p, size)
		start := int64(j) * 16 << 20
		for i := range 40 { // wraps around its 16-block region twice
			_, off := q.next()
			want := start + int64(i%16)*bs
			if off != want {
				t.Fatalf("job %d I/O %d at %d, want %d", j, i, off, want)
			}
		}
	}
	// psync workers of one job share a cursor: together they still walk
	// the region in order.
	var cur atomic.Int64
	w0, w1 := newSequence(1, 0, 0, p, size), newSequence(1, 0, 1, p, size)
	w0.seqShared, w1.seqShared = &cur, &cur
	for i := range 10 {
		w := w0
		if i%2 == 1 {
			w = w1
		}
		if _, off := w.next(); off != int64(i)*bs {
			t.Fatalf("shared cursor I/O %d at %d", i, off)
		}
	}
}

func TestScrambleChangesEverySector(t *testing.T) {
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: 1, Jobs: 1}
	q := newSequence(3, 0, 0, p, 1<<20)
	buf := make([]byte, 4096)
	prev := make([]byte, 4096)
	q.scramble(buf)
	copy(prev, buf)
	q.scramble(buf)
	for s := 0; s < 4096; s += 512 {
		if string(buf[s:s+16]) == string(prev[s:s+16]) {
			t.Fatalf("sector at %d not re-stamped", s)
		}
	}
}
