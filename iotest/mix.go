package iotest

import (
	"math"
	"math/rand/v2"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// mixTable is what a pattern with a block-size mix or a skewed offset
// distribution needs per I/O, computed once per run and shared read-only
// by its streams: cumulative shares per direction, the blocks each size
// may start at, and the distribution's constants. Each draw is then a
// few multiplications and at most a pow: nothing allocated, nothing
// locked.
type mixTable struct {
	sizes []int64 // distinct sizes, smallest first: the index is the I/O's kind
	// cum[d][i] is the cumulative share in percent of the first i+1
	// entries of direction d (0 reads, 1 writes), of size sizes[idx[d][i]].
	cum, idx [2][pattern.MaxSplitSizes]uint8
	entries  [2]int
	// unit is the granularity of random offsets: the smallest size, as
	// fio aligns a mix's offsets to its smallest block size.
	unit int64
	// fit[k] is how many units a random I/O of sizes[k] may start at;
	// last[k] the highest offset it may start at.
	fit, last [pattern.MaxSplitSizes]int64

	skew skew
}

// skew is a skewed distribution's constants over n ranges of unit bytes.
//
// The generators are fio's (lib/zipf.c, lib/gauss.c), so that a pattern
// here loads the same blocks as fio's job with the same option:
//   - zipf: Gray et al.'s approximation ("Quickly generating
//     billion-record synthetic databases", 1994) of rank 0..n-1, from one
//     uniform draw of 32 bits; zeta(n) summed over at most 10 million
//     terms, as fio sums it;
//   - pareto: rank (n-1)·u^(ln h/ln(1-h));
//   - normal: the mean of 12 uniform ranks in 0..n, plus a uniform
//     deviation of ±DEV% of n/2, halved until it stays inside.
//
// A rank becomes a block as fio scatters it: multiplied by the 64-bit
// golden-ratio constant (so neighbouring ranks land far apart, which
// defeats read-ahead and caches that favour adjacent blocks), plus a
// rotation, modulo n. The rotation is the center's fraction of n when one
// is given (normal: n·(center-0.5)), and otherwise drawn from the seed per
// job for zipf and pareto (fio draws it from its own seed, so without a
// center the hot blocks sit elsewhere than fio's, and with one they are
// the same blocks) and 0 for normal.
type skew struct {
	kind              string
	n                 uint64
	center            float64
	alpha, eta, zetan float64 // zipf
	second, theta     float64 // zipf: the draw below which the rank is 1
	pow               float64 // pareto
	stddev            int64   // normal
	hot1, hot10       uint64  // ranks (normal: distances from the mode) of the hottest 1 % and 10 %
}

// zipfMaxTerms is how many terms of zeta(n) are summed, as fio sums them:
// enough for the approximation, and the sum of more would cost seconds at
// setup on a large device.
const zipfMaxTerms = 10_000_000

// goldenRatio64 scatters ranks over the target (see skew).
const goldenRatio64 = 0x61C8864680B583EB

// Kind bits of an I/O: the size index in the low bits, and whether the
// draw fell in the hottest 1 % and 10 % of the distribution.
const (
	kindSize  = 0x1f
	kindHot10 = 0x40
	kindHot1  = 0x80
)

// newMix builds the table of a pattern over a target of size bytes; nil
// when the pattern has one block size and uniform offsets.
func newMix(p results.Pattern, size int64) (*mixTable, error) {
	if p.BSSplit == "" && p.Distribution == "" {
		return nil, nil
	}
	m := &mixTable{sizes: []int64{p.BlockSize}, unit: p.BlockSize}
	m.entries = [2]int{1, 1}
	m.cum[0][0], m.cum[1][0] = 100, 100
	if p.BSSplit != "" {
		b, err := pattern.ParseBSSplit(p.BSSplit)
		if err != nil {
			return nil, err
		}
		m.sizes = b.Sizes()
		m.unit = m.sizes[0]
		for d, list := range [2][]pattern.SizeShare{b.Read, b.Write} {
			cum := 0
			for i, e := range list {
				cum += e.Pct
				m.cum[d][i] = uint8(cum)
				for k, s := range m.sizes {
					if s == e.Size {
						m.idx[d][i] = uint8(k)
					}
				}
			}
			m.entries[d] = len(list)
		}
	}
	for k, s := range m.sizes {
		m.fit[k] = max((size-s)/m.unit+1, 1)
		m.last[k] = max((size-s)/m.unit*m.unit, 0)
	}
	d, err := pattern.ParseDistribution(p.Distribution)
	if err != nil {
		return nil, err
	}
	if d.Skewed() {
		m.skew = newSkew(d, uint64(size/m.unit))
	}
	return m, nil
}

func newSkew(d pattern.Distribution, n uint64) skew {
	s := skew{kind: d.Kind, n: max(n, 1), center: d.Center}
	s.hot1, s.hot10 = uint64(math.Ceil(float64(s.n)/100)), uint64(math.Ceil(float64(s.n)/10))
	nf := float64(s.n)
	switch d.Kind {
	case pattern.DistZipf:
		s.theta = d.Param
		for i := uint64(1); i <= min(s.n, zipfMaxTerms); i++ {
			s.zetan += math.Pow(1/float64(i), s.theta)
		}
		zeta2 := 1 + math.Pow(0.5, s.theta)
		s.second = zeta2
		s.alpha = 1 / (1 - s.theta)
		s.eta = (1 - math.Pow(2/nf, 1-s.theta)) / (1 - zeta2/s.zetan)
	case pattern.DistPareto:
		s.pow = math.Log(d.Param) / math.Log(1-d.Param)
	case pattern.DistNormal:
		if d.Param != 0 {
			s.stddev = int64(min(math.Ceil(nf*d.Param/100), float64(s.n/2)))
		}
	}
	return s
}

// rotation is the offset in ranges the job's scattered ranks are turned
// by (see skew); rng is the job's own, so every stream of a job has the
// same hot blocks.
func (s *skew) rotation(rng *rand.PCG) uint64 {
	switch {
	case s.kind == pattern.DistNormal && s.center < 0:
		return 0
	case s.kind == pattern.DistNormal:
		return uint64(int64(float64(s.n) * (s.center - 0.5)))
	case s.center >= 0:
		return uint64(float64(s.n) * s.center)
	}
	return rng.Uint64() >> 32
}

// size draws the kind (size index) of an I/O of direction write from x,
// uniform in 0..99.
func (m *mixTable) size(write bool, x uint64) uint8 {
	d := 0
	if write {
		d = 1
	}
	for i := 0; i < m.entries[d]-1; i++ {
		if x < uint64(m.cum[d][i]) {
			return m.idx[d][i]
		}
	}
	return m.idx[d][m.entries[d]-1]
}

// uniform32 is a draw in [0,1] with the 32 bits of resolution fio's
// generators have.
func (q *sequence) uniform32() float64 {
	return float64(q.rng.Uint64()>>32) / math.MaxUint32
}

// skewed draws the block of the next I/O and its kind bits of hotness.
func (q *sequence) skewed() (block uint64, hot uint8) {
	s := &q.mix.skew
	var rank, dist uint64
	switch s.kind {
	case pattern.DistZipf:
		u := q.uniform32()
		switch z := u * s.zetan; {
		case z < 1:
			rank = 0
		case z < s.second:
			rank = 1
		default:
			rank = uint64(float64(s.n) * math.Pow(s.eta*u-s.eta+1, s.alpha))
		}
		dist = rank
	case pattern.DistPareto:
		rank = uint64(float64(s.n-1) * math.Pow(q.uniform32(), s.pow))
		// The density of rank x grows as x^(1/pow-1): for h above 0.5
		// (pow below 1) the hottest ranks are the highest.
		dist = rank
		if s.pow < 1 {
			dist = s.n - 1 - min(rank, s.n-1)
		}
	case pattern.DistNormal:
		var sum uint64
		for range 12 {
			sum += (q.rng.Uint64() >> 32) % (s.n + 1)
		}
		sum = (sum + 11) / 12
		if s.stddev != 0 {
			dev := int64(float64(s.stddev)*(float64(q.rng.Uint64()>>32)/(math.MaxUint32+1.0))) - s.stddev/2
			for v := int64(sum) + dev; v < 0 || uint64(v) >= s.n; v = int64(sum) + dev {
				dev /= 2
			}
			sum = uint64(int64(sum) + dev)
		}
		rank = sum
		if mid := s.n / 2; sum >= mid {
			dist = 2 * (sum - mid)
		} else {
			dist = 2 * (mid - sum)
		}
	}
	if dist < s.hot10 {
		hot |= kindHot10
		if dist < s.hot1 {
			hot |= kindHot1
		}
	}
	return (rank*goldenRatio64 + q.rotation) % s.n, hot
}

// mixFigures states in r what a mix and a skew did in the window: the
// I/Os of each size, and the share that fell in the hottest blocks.
func mixFigures(r *results.Result, s *stats) {
	p := r.Pattern
	if p.BSSplit != "" {
		if b, err := pattern.ParseBSSplit(p.BSSplit); err == nil {
			for k, size := range b.Sizes() {
				r.SizeMix = append(r.SizeMix, results.SizeCount{BlockSize: size, ReadIOs: s.sizeIOs[0][k], WriteIOs: s.sizeIOs[1][k]})
			}
		}
	}
	if ios := s.readIOs + s.writeIOs; p.Distribution != "" && ios > 0 {
		for i, hot := range [2]uint64{s.hot1, s.hot10} {
			r.HotSet = append(r.HotSet, results.HotShare{BlocksPct: results.HotSetPcts[i], IOsPct: round2(float64(hot) * 100 / float64(ios))})
		}
	}
}
