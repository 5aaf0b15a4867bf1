package results

import "testing"

func TestPatternName(t *testing.T) {
	cases := map[string]Pattern{
		"rand-4k-r90-qd32":    {Access: Random, BlockSize: 4096, ReadPct: 90, QueueDepth: 32, Jobs: 1},
		"seq-read-1m-qd8":     {Access: Sequential, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 8, Jobs: 1},
		"seq-write-1m-qd8":    {Access: Sequential, BlockSize: 1 << 20, ReadPct: 0, QueueDepth: 8, Jobs: 1},
		"rand-16k-r70-qd1-j8": {Access: Random, BlockSize: 16384, ReadPct: 70, QueueDepth: 1, Jobs: 8},
	}
	for want, p := range cases {
		if got := p.Name(); got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
	}
}
