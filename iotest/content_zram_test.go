package iotest

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// writeOnce writes the first size bytes of dev once, sequentially, with
// pattern p (its block size, queue depth and content), and closes it.
func writeOnce(t *testing.T, dev string, p results.Pattern, size int64) {
	t.Helper()
	tg := openPlan(t, dev, target.Options{Size: size, Writes: true, AllowDestructive: true})
	r, err := Run(context.Background(), tg, p, Options{Runtime: time.Minute, MaxIOs: uint64(size / p.BlockSize), Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(r.Completed.Writes) * p.BlockSize; got != size {
		t.Fatalf("%s: wrote %d bytes, want %d", p.Name(), got, size)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
}

// fioWriteOnce does what writeOnce does, with fio and its options extra.
func fioWriteOnce(t *testing.T, fio, dev string, bs, qd int, size int64, extra ...string) {
	t.Helper()
	args := append([]string{"--name=once", "--filename=" + dev, "--rw=write", fmt.Sprintf("--bs=%d", bs),
		fmt.Sprintf("--iodepth=%d", qd), "--ioengine=io_uring", "--direct=1", fmt.Sprintf("--size=%d", size),
		"--output-format=terse"}, extra...)
	if out, err := exec.Command(fio, args...).CombinedOutput(); err != nil {
		t.Fatalf("fio %v: %v\n%s", args, err, out)
	}
}

// On zram, data written with --compress takes the memory fio's
// buffer_compress_percentage does, per byte written: zram compresses
// each page, and iomatrix's chunks are fio's (random, then zeros). The
// default, random data, is stored uncompressed by both.
func TestCompressOnZRAMMatchesFio(t *testing.T) {
	fio := testenv.Command(t, "fio")
	const size = 256 << 20
	z := testenv.NewZRAM(t, size)
	for _, pct := range []int{0, 50, 75} {
		p := results.Pattern{Access: results.Sequential, BlockSize: 128 << 10, QueueDepth: 8, Jobs: 1, Compress: pct}
		z.Reset(t, size)
		writeOnce(t, z.Dev, p, size)
		ours := z.MMStat(t)
		z.Reset(t, size)
		fioWriteOnce(t, fio, z.Dev, int(p.BlockSize), p.QueueDepth, size, fmt.Sprintf("--buffer_compress_percentage=%d", pct))
		theirs := z.MMStat(t)
		t.Logf("compress %d: iomatrix %+v, fio %+v", pct, ours, theirs)
		for _, f := range []struct {
			what       string
			ours, fios int64
		}{{"orig_data_size", ours.OrigDataSize, theirs.OrigDataSize}, {"compr_data_size", ours.ComprDataSize, theirs.ComprDataSize},
			{"mem_used_total", ours.MemUsedTotal, theirs.MemUsedTotal}} {
			if math.Abs(float64(f.ours)/float64(f.fios)-1) > 0.10 {
				t.Errorf("compress %d: %s %d, fio's %d: more than 10 %% apart", pct, f.what, f.ours, f.fios)
			}
		}
	}
}

// With --dedupe 50, half the writes repeat an earlier one's data: read
// back, the device holds as many distinct blocks as fio's
// dedupe_percentage=50 leaves, within 2 %.
func TestDedupeDistinctBlocksMatchFio(t *testing.T) {
	fio := testenv.Command(t, "fio")
	// 65,536 writes: the count of unique ones, binomial, varies by 0.4 %
	// (one standard deviation) from one seed to another.
	const size = 256 << 20
	z := testenv.NewZRAM(t, size)
	p := results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 8, Jobs: 1, Dedupe: 50}
	writeOnce(t, z.Dev, p, size)
	ours := distinctBlocks(t, z.Dev, size)
	z.Reset(t, size)
	fioWriteOnce(t, fio, z.Dev, 4096, 8, size, "--dedupe_percentage=50")
	theirs := distinctBlocks(t, z.Dev, size)
	t.Logf("distinct 4 KiB blocks of %d: iomatrix %d, fio %d", size/4096, ours, theirs)
	if math.Abs(float64(ours)/float64(theirs)-1) > 0.02 {
		t.Errorf("%d distinct blocks, fio's %d: more than 2 %% apart", ours, theirs)
	}
}

// distinctBlocks counts the distinct 4 KiB blocks of the first size bytes
// of dev.
func distinctBlocks(t *testing.T, dev string, size int64) int {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seed := maphash.MakeSeed()
	seen := map[uint64]bool{}
	buf := make([]byte, 4096)
	for range size / 4096 {
		if _, err := io.ReadFull(f, buf); err != nil {
			t.Fatal(err)
		}
		seen[maphash.Bytes(seed, buf)] = true
	}
	return len(seen)
}
