package iotest

import (
	"bytes"
	"compress/flate"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// writes is n writes of bs bytes of a stream of pattern p, each buffer
// taken from a shaped arena of qd buffers in turn, as a ring stream
// takes its slots.
func writes(t *testing.T, p results.Pattern, qd, n int) [][]byte {
	t.Helper()
	bs := int(p.BlockSize)
	mem := make([]byte, qd*bs)
	fillRandom(mem, rand.NewPCG(1, 0x5eed))
	shapeArena(mem, p)
	q := newSequence(3, 0, 0, p, 1<<30)
	out := make([][]byte, n)
	for i := range out {
		buf := mem[i%qd*bs : (i%qd+1)*bs]
		q.scramble(buf)
		out[i] = bytes.Clone(buf)
	}
	return out
}

func deflated(b []byte) int {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestSpeed)
	_, _ = w.Write(b)
	_ = w.Close()
	return out.Len()
}

func TestCompressShapesEveryChunk(t *testing.T) {
	for _, pct := range []int{0, 10, 33, 50, 75, 97, 100} {
		p := results.Pattern{Access: results.Sequential, BlockSize: 16 << 10, QueueDepth: 4, Jobs: 1, Compress: pct}
		ws := writes(t, p, 4, 64)
		random := 512 * (100 - pct) / 100
		seen := map[string]bool{}
		for i, w := range ws {
			for c := 0; c < len(w); c += 512 {
				if z := w[c+random : c+512]; !bytes.Equal(z, make([]byte, len(z))) {
					t.Fatalf("compress %d: write %d, chunk at %d: not zeros past byte %d", pct, i, c, random)
				}
			}
			seen[string(w)] = true
		}
		if want := map[bool]int{true: 1, false: len(ws)}[pct == 100]; len(seen) != want {
			t.Errorf("compress %d: %d distinct writes of %d, want %d", pct, len(seen), len(ws), want)
		}
		// What a compressor makes of it: about the share asked for.
		got := 100 - 100*float64(deflated(bytes.Join(ws, nil)))/float64(len(ws)*len(ws[0]))
		if math.Abs(got-float64(pct)) > 3 {
			t.Errorf("compress %d: deflate saved %.1f %%", pct, got)
		}
	}
}

func TestDedupeRepeatsTheLastUniqueWrite(t *testing.T) {
	for _, c := range []struct{ compress, dedupe int }{{0, 50}, {0, 100}, {50, 30}, {0, 1}} {
		p := results.Pattern{Access: results.Random, BlockSize: 8192, QueueDepth: 8, Jobs: 1, Compress: c.compress, Dedupe: c.dedupe}
		const n = 20_000
		ws := writes(t, p, 8, n)
		seen := map[string]bool{}
		var lastNew []byte
		for i, w := range ws {
			switch {
			case !seen[string(w)]:
				seen[string(w)], lastNew = true, w
			case !bytes.Equal(w, lastNew):
				t.Fatalf("%+v: write %d repeats a write other than the last new one", c, i)
			}
		}
		wantUnique := float64(n) * float64(100-c.dedupe) / 100
		if c.dedupe == 100 {
			wantUnique = 1
		}
		if math.Abs(float64(len(seen))-wantUnique) > 0.02*n {
			t.Errorf("%+v: %d distinct writes of %d, want about %.0f", c, len(seen), n, wantUnique)
		}
	}
}

// Content never moves offsets or directions: they are the seed's.
func TestContentKeepsOffsets(t *testing.T) {
	plain := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 30, QueueDepth: 4, Jobs: 1}
	shaped := plain
	shaped.Compress, shaped.Dedupe = 40, 60
	a, b := newSequence(5, 0, 0, plain, 1<<30), newSequence(5, 0, 0, shaped, 1<<30)
	buf := make([]byte, 4096)
	for range 10_000 {
		wa, oa := a.next()
		wb, ob := b.next()
		if wa != wb || oa != ob {
			t.Fatal("compress and dedupe changed the offsets or directions")
		}
		if wb {
			a.scramble(buf)
			b.scramble(buf)
		}
	}
}

// The cost of giving one 4 KiB write its content: random, unique data
// (the default, sequence.scramble's 16 bytes a sector), data that
// compresses (the same, inside each chunk's random part), and data that
// repeats (the random parts generated whole, as fio's refill_buffers).
func BenchmarkWriteContent(b *testing.B) {
	for _, c := range []struct {
		name             string
		compress, dedupe int
	}{{"plain", 0, 0}, {"compress50", 50, 0}, {"dedupe50", 0, 50}, {"compress50-dedupe50", 50, 50}} {
		b.Run(c.name, func(b *testing.B) {
			p := results.Pattern{Access: results.Random, BlockSize: 4096, QueueDepth: 1, Jobs: 1, Compress: c.compress, Dedupe: c.dedupe}
			q := newSequence(1, 0, 0, p, 1<<30)
			buf := make([]byte, 4096)
			b.SetBytes(4096)
			for b.Loop() {
				q.scramble(buf)
			}
		})
	}
}
