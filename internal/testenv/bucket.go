package testenv

import (
	"math"
	"sync"
	"time"
)

// BucketUnit is what a CapacityBucket counts.
type BucketUnit int

const (
	// Requests: each read or write costs one (an IOPS limit).
	Requests BucketUnit = iota
	// Bytes: each read or write costs its size in bytes (a bandwidth
	// limit).
	Bytes
)

func (u BucketUnit) String() string {
	if u == Bytes {
		return "bytes"
	}
	return "requests"
}

// CapacityBucket is the limit a CapacityDisk serves under: a token bucket
// of a rate and a burst (see CapacityDisk). Each disk has its own; disks
// that share one (UseBucket) are one volume's capacity, whichever of
// them a request arrives on: two loop devices that draw on one bucket
// are two systems' devices on one cloud volume, each with its own
// counts, and the volume's limit on them together.
//
// A bucket counts requests (an IOPS limit) or bytes (a bandwidth limit:
// each request costs its size), its unit, fixed when it is made; rates
// are in units a second, bursts and credits in units. A request waits
// until the bucket holds its cost.
//
// With a peak (SetPeak), the bucket is a volume's burst credits, as the
// credit buckets of cloud volumes sold with a burst: its rate is the
// baseline, earned whether the volume is busy or idle, its burst the
// credits it holds at most, and the peak the fastest it serves while
// credits last. A volume that has idled serves at the peak until the
// credits are spent (burst units above the baseline: at the peak P and
// baseline b, for burst/(P-b) seconds), then at the baseline, and earns
// its credits back at the baseline while idle. The same bucket of bytes
// that only writes draw on is an SSD's fast write cache (WriteCache): the
// credits are the room in the cache, the baseline the rate at which the
// drive drains it, always, and the peak the rate at which writes go into
// it.
//
// Changing a limit (SetLimit, SetPeak, SetCreditLimit) keeps what the
// bucket holds, at most its new burst, as of the last turn it has handed
// out: the requests that wait keep their turns, and the next one follows
// the last at the new rate, with no credits gained or lost on the way.
type CapacityBucket struct {
	unit    BucketUnit
	mu      sync.Mutex
	credits tokens
	peak    tokens // rate 0: no peak
}

// NewCapacityBucket is a bucket of iops requests a second (0: no limit)
// holding burst tokens (0: iops/100, at least 1).
func NewCapacityBucket(iops, burst int) *CapacityBucket {
	b := &CapacityBucket{unit: Requests}
	b.SetLimit(iops, burst)
	return b
}

// NewCreditBucket is a bucket counting unit with the limit l, full.
func NewCreditBucket(unit BucketUnit, l CreditLimit) *CapacityBucket {
	b := &CapacityBucket{unit: unit}
	b.SetCreditLimit(l)
	return b
}

// Unit is what the bucket counts.
func (b *CapacityBucket) Unit() BucketUnit { return b.unit }

// SetLimit sets the bucket's rate in units a second (0: no limit) and
// its burst in units (0: a hundredth of the rate, at least 1), for the
// requests that arrive from now on; those already waiting keep their
// turns. The credits held are kept (see CapacityBucket).
func (b *CapacityBucket) SetLimit(rate, burst int) { b.setLimit(time.Now(), rate, burst) }

func (b *CapacityBucket) setLimit(now time.Time, rate, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.credits.set(now, int64(rate), defaultBurst(int64(rate), int64(burst)))
}

// Limit is the bucket's rate (0: none) and burst.
func (b *CapacityBucket) Limit() (rate, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int(b.credits.rate), int(b.credits.burst)
}

// SetPeak makes the bucket serve at most rate units a second however
// many credits it holds (0: no peak, as before): see CapacityBucket. The
// peak has a burst of its own, 10 ms' worth (a hundredth of it, at
// least 1), so that a late timer costs no rate.
func (b *CapacityBucket) SetPeak(rate int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peak.set(time.Now(), int64(rate), defaultBurst(int64(rate), 0))
}

// SetCreditLimit sets the bucket's baseline, credits and peak at once.
func (b *CapacityBucket) SetCreditLimit(l CreditLimit) {
	b.setCreditLimit(time.Now(), l)
}

func (b *CapacityBucket) setCreditLimit(now time.Time, l CreditLimit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.credits.set(now, l.Baseline, defaultBurst(l.Baseline, l.Credits))
	b.peak.set(now, l.Peak, defaultBurst(l.Peak, 0))
}

// CreditLimit is the bucket's baseline, credits and peak.
func (b *CapacityBucket) CreditLimit() CreditLimit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return CreditLimit{Baseline: b.credits.rate, Credits: b.credits.burst, Peak: b.peak.rate}
}

// Fill fills the bucket, as a long idle spell would: a test that wants
// the whole burst calls it before it measures (udev's probes of a new
// loop device, a file system made on it, take their share otherwise).
func (b *CapacityBucket) Fill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.credits.tat, b.peak.tat = time.Time{}, time.Time{}
}

// Held is how many units the bucket holds now, of its credits: its burst
// when full, less than 0 while requests wait for their turns.
func (b *CapacityBucket) Held() float64 { return b.heldAt(time.Now()) }

func (b *CapacityBucket) heldAt(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.credits.held(now)
}

// turn is when a request of size bytes that arrives at now may be
// served. Turns are handed out under the lock, so they follow the
// arrival order. The turn the credits give is then held to the peak's
// own bucket.
func (b *CapacityBucket) turn(now time.Time, size int) time.Time {
	cost := int64(1)
	if b.unit == Bytes {
		cost = int64(size)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak.turn(b.credits.turn(now, cost), cost)
}

func defaultBurst(rate, burst int64) int64 {
	if burst <= 0 {
		burst = max(rate/100, 1)
	}
	return burst
}

// tokens is a token bucket of rate units a second holding burst units,
// kept as the theoretical arrival time of the next request (the generic
// cell rate algorithm): tat is when the bucket would be full again if no
// request came, and a request of cost c may go when the bucket holds c,
// at tat - (burst - c) units' time, moving tat on by c units' time.
type tokens struct {
	rate, burst int64
	perUnit     float64       // ns
	full        time.Duration // burst units' time
	tat         time.Time
	last        time.Time // the latest turn handed out
}

func (k *tokens) span(units float64) time.Duration {
	return time.Duration(math.Round(units * k.perUnit))
}

// turn is the turn of a request of cost units arriving at now (rate 0:
// no limit, at once), which it takes from the bucket.
func (k *tokens) turn(now time.Time, cost int64) time.Time {
	if k.rate == 0 {
		return now
	}
	if k.tat.Before(now) {
		k.tat = now
	}
	c := k.span(float64(cost))
	at := k.tat.Add(c - k.full)
	k.tat = k.tat.Add(c)
	if at.Before(now) {
		at = now
	}
	if at.After(k.last) {
		k.last = at
	}
	return at
}

// held is what the bucket holds at now, in units.
func (k *tokens) held(now time.Time) float64 {
	if k.rate == 0 || !k.tat.After(now) {
		return float64(k.burst)
	}
	return float64(k.burst) - float64(k.tat.Sub(now))/k.perUnit
}

// set changes the bucket's rate and burst as of now or the latest turn
// it handed out, whichever is later, keeping what it holds then (at most
// the new burst; a bucket that had no limit is full, on any clock).
func (k *tokens) set(now time.Time, rate, burst int64) {
	ref := now
	if k.last.After(ref) {
		ref = k.last
	}
	held := math.Inf(1)
	if k.rate > 0 {
		held = k.held(ref)
	}
	k.rate, k.burst = rate, burst
	if rate == 0 {
		k.perUnit, k.full = 0, 0
		return
	}
	k.perUnit = 1e9 / float64(rate)
	k.full = k.span(float64(burst))
	k.tat = time.Time{} // full, whatever the clock
	if held < float64(burst) {
		k.tat = ref.Add(k.span(float64(burst) - held))
	}
}

// CreditLimit is a credit bucket's limit, in its unit (requests or
// bytes): see CapacityBucket.
type CreditLimit struct {
	// Baseline is the rate the bucket earns, busy or idle, and serves at
	// once its credits are spent, in units a second; 0 is no limit.
	Baseline int64
	// Credits is the most the bucket holds, in units; 0 is a hundredth
	// of Baseline (10 ms' worth), at least 1.
	Credits int64
	// Peak is the fastest the bucket serves while it holds credits, in
	// units a second, above Baseline; 0 is no peak (a full bucket serves
	// its credits at once).
	Peak int64
}

// check tells whether the limit is one a bucket can serve as stated.
func (l CreditLimit) check() bool {
	return l.Baseline >= 0 && l.Credits >= 0 && l.Peak >= 0 && (l.Peak == 0 || l.Baseline == 0 || l.Peak > l.Baseline)
}

// FastStretch is how many units a full bucket serves at the peak to a
// load that asks for more: Credits·Peak/(Peak−Baseline) (Credits above
// the baseline). It is a cache-like volume's fast stretch in bytes, a
// burst's I/Os for a bucket of requests; +Inf with no baseline.
//
// The bucket's peak has a burst of its own (see SetPeak): a full bucket
// serves 10 ms of the peak at once, then the rest at the peak, so that
// the stretch ends 10 ms·Peak/(Peak−Baseline) before FastTime and falls
// short of FastStretch by the baseline's units over that time (a share
// of 10 ms·Baseline/Credits: 0.35 % of a 64 MiB stretch at 200 MiB/s,
// then 20).
func (l CreditLimit) FastStretch() float64 {
	switch {
	case l.Baseline == 0:
		return math.Inf(1)
	case l.Peak == 0:
		return float64(l.Credits)
	}
	return float64(l.Credits) * float64(l.Peak) / float64(l.Peak-l.Baseline)
}

// FastTime is how long a full bucket serves at the peak to a load that
// asks for more: Credits/(Peak−Baseline); the longest Duration with no
// baseline, 0 with no peak.
func (l CreditLimit) FastTime() time.Duration {
	switch {
	case l.Baseline == 0:
		return math.MaxInt64
	case l.Peak == 0:
		return 0
	}
	return time.Duration(math.Round(float64(l.Credits) / float64(l.Peak-l.Baseline) * 1e9))
}

// WriteCache is the limit of a cache-like volume's writes
// (CapacityOptions.WriteBandwidth), in bytes: writes go at fast bytes a
// second into a cache that drains at slow bytes a second, busy or idle,
// so that an empty cache written flat out takes stretch bytes at fast,
// then writes go at slow, and the cache empties at slow while idle. The
// cache holds stretch·(fast−slow)/fast bytes (its Credits); FastStretch
// gives stretch back, to the byte. fast must exceed slow.
func WriteCache(stretch, fast, slow int64) CreditLimit {
	return CreditLimit{Baseline: slow, Peak: fast,
		Credits: int64(math.Round(float64(stretch) * float64(fast-slow) / float64(fast)))}
}
