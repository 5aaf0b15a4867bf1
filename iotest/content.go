package iotest

import (
	"math/bits"
	"math/rand/v2"

	"github.com/iomatrix/iomatrix/results"
)

// chunk is the region of a write whose content compresses as one: fio's
// buffer_compress_chunk, at its default.
const chunk = 512

// content shapes what a stream's writes carry when the pattern asks for
// data that compresses or repeats (results.Pattern's Compress and
// Dedupe), as fio's buffer_compress_percentage and dedupe_percentage
// (dedupe_mode=repeat) do. A pattern that asks for neither has none: its
// writes are random and unique, and cost what they always did (see
// sequence.scramble).
//
// Compress: each 512-byte chunk of a buffer is random bytes, then zeros,
// the zeros being the percentage asked for (fio's split: 512×(100-PCT)/100
// random bytes, rounded down, then zeros). The arena is shaped so once
// (shapeArena); each write then makes fresh only the first bytes of each
// chunk's random part (16, as sequence.scramble does, or fewer where the
// part is shorter), so that no two writes are alike while the share of
// zeros stays. At 100 % a write is all zeros, as fio's is.
//
// Dedupe: with the percentage's probability, drawn from a generator of
// its own so that offsets and directions stay those of the seed, a write
// repeats the content of the stream's last unique write: its random parts
// are generated again from the data generator's state that produced that
// write (a seed per chunk from it, the chunk's bytes from the seed: see
// fillChunk). So every write's random parts are generated whole (fio's
// refill_buffers, which it turns on for dedupe too): the arena's content
// differs from buffer to buffer, and a repeat must not depend on which
// buffer it lands in.
type content struct {
	random int    // bytes of each chunk that are random; the rest are zeros
	stamp  int    // of those, made fresh per write when nothing repeats
	dedupe uint64 // percentage of writes that repeat the last unique one
	draw   rand.PCG
	// last is the data generator's state before the last unique write;
	// replay is its copy that a repeat consumes.
	last, replay rand.PCG
}

// newContent is the content of a stream's writes, nil for random,
// unique data; data is the stream's data generator, freshly seeded.
func newContent(p results.Pattern, seed uint64, job, worker int, data *rand.PCG) *content {
	if p.Compress == 0 && p.Dedupe == 0 {
		return nil
	}
	c := &content{random: randomBytes(p.Compress), dedupe: uint64(p.Dedupe), last: *data}
	c.stamp = min(16, c.random)
	c.draw.Seed(seed^0xdede, uint64(job)<<32|uint64(worker))
	return c
}

// randomBytes is how many bytes of a chunk are random for data that
// compresses by pct percent.
func randomBytes(pct int) int { return chunk * (100 - pct) / 100 }

// shapeArena zeroes what follows the random part of every chunk of mem,
// an arena filled with random bytes whose buffers start on chunk
// boundaries, for a pattern whose data compresses.
func shapeArena(mem []byte, p results.Pattern) {
	random := randomBytes(p.Compress)
	if random == chunk {
		return
	}
	for i := 0; i < len(mem); i += chunk {
		clear(mem[i+random : min(i+chunk, len(mem))])
	}
}

// write gives buf, the buffer of the stream's next write, its content;
// data is the stream's data generator.
func (c *content) write(data *rand.PCG, buf []byte) {
	if c.dedupe == 0 {
		if c.stamp == 0 {
			return // all zeros
		}
		for i := 0; i < len(buf); i += chunk {
			fillRandom(buf[i:i+c.stamp], data)
		}
		return
	}
	src := data
	if hi, _ := bits.Mul64(c.draw.Uint64(), 100); hi < c.dedupe {
		c.replay = c.last
		src = &c.replay
	} else {
		c.last = *data
	}
	for i := 0; i < len(buf); i += chunk {
		fillChunk(buf[i:i+c.random], src.Uint64())
	}
}

// fillChunk fills b with random bytes from seed: a SplitMix64 sequence,
// two multiplications per 8 bytes, a quarter of what a PCG step costs,
// and as incompressible. The chunk's seed comes from the data generator,
// so a repeat, which replays that generator, makes the same bytes.
func fillChunk(b []byte, seed uint64) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		putU64(b[i:], splitmix(&seed))
	}
	if i < len(b) {
		v := splitmix(&seed)
		for ; i < len(b); i++ {
			b[i], v = byte(v), v>>8
		}
	}
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
