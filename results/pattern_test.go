package results

import "testing"

func TestPatternName(t *testing.T) {
	cases := map[string]Pattern{
		"rand-4k-r90-qd32":       {Access: Random, BlockSize: 4096, ReadPct: 90, QueueDepth: 32, Jobs: 1},
		"seq-read-1m-qd8":        {Access: Sequential, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 8, Jobs: 1},
		"seq-write-1m-qd8":       {Access: Sequential, BlockSize: 1 << 20, ReadPct: 0, QueueDepth: 8, Jobs: 1},
		"rand-16k-r70-qd1-j8":    {Access: Random, BlockSize: 16384, ReadPct: 70, QueueDepth: 1, Jobs: 8},
		"seq-write-128k-qd8-c50": {Access: Sequential, BlockSize: 128 << 10, QueueDepth: 8, Jobs: 1, Compress: 50},
		"rand-4k-r70-qd1-d20":    {Access: Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 1, Jobs: 1, Dedupe: 20},
		"rand-4k-r0-qd4-c75-d5":  {Access: Random, BlockSize: 4096, QueueDepth: 4, Jobs: 1, Compress: 75, Dedupe: 5},
	}
	for want, p := range cases {
		if got := p.Name(); got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
	}
}

func TestPatternContent(t *testing.T) {
	for want, p := range map[string]Pattern{
		"random, unique":            {},
		"compress 50 %":             {Compress: 50},
		"dedupe 20 %":               {Dedupe: 20},
		"compress 75 %, dedupe 5 %": {Compress: 75, Dedupe: 5},
	} {
		if got := p.Content(); got != want {
			t.Errorf("Content() of %+v = %q, want %q", p, got, want)
		}
	}
}
