package pattern

import (
	"errors"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestParseSpec(t *testing.T) {
	rand := func(bs int64, read, qd, jobs int) results.Pattern {
		return results.Pattern{Access: results.Random, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: jobs}
	}
	for _, c := range []struct {
		spec string
		rw   string
		want results.Pattern
	}{
		{"randread:4k:1", "randread", rand(4096, 100, 1, 1)},
		{"randwrite:4k:32", "randwrite", rand(4096, 0, 32, 1)},
		{"randrw:16k:8", "randrw", rand(16384, 50, 8, 1)},
		{"randrw:16k:8:70", "randrw", rand(16384, 70, 8, 1)},
		{"randrw:8k:4:0:2", "randrw", rand(8192, 0, 4, 2)},
		{"randrw:8k:4:100", "randrw", rand(8192, 100, 4, 1)},
		{"randread:4k:32::4", "randread", rand(4096, 100, 32, 4)},
		{"randread:4096:2", "randread", rand(4096, 100, 2, 1)},
		{"read:1m:2", "read", results.Pattern{Access: results.Sequential, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 2, Jobs: 1}},
		{"write:128k:1", "write", results.Pattern{Access: results.Sequential, BlockSize: 128 << 10, ReadPct: 0, QueueDepth: 1, Jobs: 1}},
		{"randread::32 bssplit=4k/60:16k/30:1m/10", "randread", results.Pattern{Access: results.Random, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 32, Jobs: 1, BSSplit: "4k/60:16k/30:1m/10"}},
		{"randrw:4k:8:70 random_distribution=zipf:1.2", "randrw", results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 8, Jobs: 1, Distribution: "zipf:1.2"}},
		{"write:128k:1 buffer_compress_percentage=50 dedupe_percentage=20", "write", results.Pattern{Access: results.Sequential, BlockSize: 128 << 10, QueueDepth: 1, Jobs: 1, Compress: 50, Dedupe: 20}},
		{"write:8k:1 sync=fdatasync", "write", results.Pattern{Access: results.Sequential, BlockSize: 8192, QueueDepth: 1, Jobs: 1, Sync: "fdatasync:1"}},
		{"write:8k:1 sync=fsync:2:After", "write", results.Pattern{Access: results.Sequential, BlockSize: 8192, QueueDepth: 1, Jobs: 1, Sync: "fsync:2:after"}},
		{"randwrite:4k:32 sync=DSYNC", "randwrite", results.Pattern{Access: results.Random, BlockSize: 4096, QueueDepth: 32, Jobs: 1, Sync: "dsync"}},
		{"write:4k:1::4 sync=fsync:8", "write", results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 4, Sync: "fsync:8"}},
		{"write:4k:1 sync=none", "write", results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 1}},
	} {
		ps, err := ParseSpec(c.spec)
		if err != nil || ps.RW != c.rw || ps.Pattern != c.want || ps.Spec != c.spec {
			t.Errorf("%s: %+v, %v; want %s %+v", c.spec, ps, err, c.rw, c.want)
		}
	}
	for _, c := range []struct {
		spec, says string
	}{
		{"randread:4k", "want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70"},
		{"randread:4k:1:50:1:9", "want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70"},
		{"randread:4k:", "QD is missing"},
		{"randread:4k:8 bssplit=4k/50:8k/50", "BS: leave it empty with bssplit, whose largest size is the pattern's block size"},
		{"randread::8 bssplit=4k/50:8k/40", "bssplit: \"4k/50:8k/40\": shares sum to 90%, not 100%"},
		{"read:4k:8 random_distribution=zipf:1.2", "random_distribution: a skewed distribution applies to random offsets only"},
		{"randread:4k:8 rate=5", "\"rate=5\": after the pattern, want bssplit=MIX, random_distribution=DIST, buffer_compress_percentage=PCT, dedupe_percentage=PCT or sync=MODE"},
		{"randwrite:4k:8 dedupe_percentage=x", `dedupe_percentage "x" is not a whole number`},
		{"randwrite:4k:8 buffer_compress_percentage=101", "buffer_compress_percentage: 101 is outside 0..100"},
		{"randread:4k:8 dedupe_percentage=50", "dedupe_percentage: sets what writes carry, and the pattern only reads"},
		{"randread:4k:x", `QD "x" is not a whole number`},
		{"randread:4k:1 sync=dsync", "sync: dsync makes writes durable: the pattern only reads"},
		{"write:4k:2 sync=fdatasync:1", "sync: fdatasync:1 needs QD 1: a sync waits for the write it follows, and a stream with more in flight would sync writes it has not finished (use dsync, or more jobs)"},
		{"write:4k:1 sync=fsync:0", `sync: "fsync:0": N of fsync:N must be a number of writes from 1 to 1048576, with at most two decimals (1.5: two syncs in three writes)`},
		{"write:4k:1 sync=fdatasync:1.505", `sync: "fdatasync:1.505": N of fdatasync:N must be a number of writes from 1 to 1048576, with at most two decimals (1.5: two syncs in three writes)`},
		{"write:4k:1 sync=fdatasync:1e1", `sync: "fdatasync:1e1": N of fdatasync:N must be a number of writes from 1 to 1048576, with at most two decimals (1.5: two syncs in three writes)`},
		{"write:4k:1 sync=fdatasync:0x1p1", `sync: "fdatasync:0x1p1": N of fdatasync:N must be a number of writes from 1 to 1048576, with at most two decimals (1.5: two syncs in three writes)`},
		{"write:4k:1 sync=dsync:2", `sync: "dsync:2": dsync takes no count`},
		{"write:4k:1 sync=osync", `sync: "osync" is not one of none, dsync, fdatasync:N[:after], fsync:N[:after]`},
		{"randrw:4k:1:half", `RWMIX "half" is not a whole number`},
		{"randread:4k:1::two", `JOBS "two" is not a whole number`},
		{"trim:4k:1", `RW: "trim" is not one of randread, randwrite, randrw, read, write`},
		{"randread:4q:1", `BS: not a size: "4q" has unknown unit "q" (use k, m, g, t, KiB, MiB, GiB, TiB)`},
		{"randread::1", "BS: not a size: empty"},
		{"randread:3000:1", "BS: 3000 bytes is not a multiple of 512"},
		{"randread:64m:256::64", "BS: jobs × queue depth × block size = 1TiB of I/O buffers, more than 4GiB"},
		{"randread::1 bssplit=128m/100", "bssplit: 134217728 bytes is outside 512B..64MiB"},
		{"randread::1 bssplit=4k/50:128m/50", "bssplit: size 128MiB is not a multiple of 512 from 512B to 64MiB"},
		{"randread::256::64 bssplit=4k/50:64m/50", "bssplit: jobs × queue depth × block size = 1TiB of I/O buffers, more than 4GiB"},
		{"randread::256::64 bssplit=64m/100", "bssplit: jobs × queue depth × block size = 1TiB of I/O buffers, more than 4GiB"},
		{"randread:4k:0", "QD: 0 is outside 1..256"},
		{"randread:4k:257", "QD: 257 is outside 1..256"},
		{"randread:4k:1::0", "JOBS: 0 is outside 1..64"},
		{"randrw:4k:1:101", "RWMIX: 101 is outside 0..100"},
		{"randrw:4k:1:-1", "RWMIX: -1 is outside 0..100"},
		{"randread:4k:1:70", "RWMIX: only applies to RW randrw (got RW randread)"},
	} {
		_, err := ParseSpec(c.spec)
		var se *SpecError
		if !errors.As(err, &se) || !errors.Is(err, ErrBadPattern) || se.Spec != c.spec || se.Msg != c.says ||
			err.Error() != `"`+c.spec+`": `+c.says {
			t.Errorf("%s: %v, want a SpecError saying %q", c.spec, err, c.says)
		}
	}
}
