package pattern

import (
	"errors"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestMixCanonicalNames(t *testing.T) {
	base := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 90, QueueDepth: 32, Jobs: 1}
	for _, c := range []struct {
		readPct           int
		bssplit, dist     string
		canonical, name   string
		largest           int64
		canonicalDistName string
	}{
		{90, "16k/30:4k/60:1m/10", "zipf:1.20", "4k/60:16k/30:1m/10", "rand-4k60+16k30+1m10-r90-qd32-zipf1.2", 1 << 20, "zipf:1.2"},
		{90, "4k/:8k/", "", "4k/50:8k/50", "rand-4k50+8k50-r90-qd32", 8192, ""},
		{90, "4k/100", "random", "", "rand-4k-r90-qd32", 4096, ""},
		{90, "4k/50:16k/50,4k/90:8k/10", "pareto:0.9", "4k/50:16k/50,4k/90:8k/10", "rand-4k50+16k50_4k90+8k10-r90-qd32-pareto0.9", 16384, "pareto:0.9"},
		{100, "4k/50:16k/50,4k/90:8k/10", "normal:5%:0.25", "4k/50:16k/50", "rand-4k50+16k50-r100-qd32-normal5c0.25", 16384, "normal:5:0.25"},
		{0, "4k/50:16k/50,4k/90:8k/10", "", "4k/90:8k/10", "rand-4k90+8k10-r0-qd32", 8192, ""},
		{90, "4k/50:2k/0:8K/50", "", "4k/50:8k/50", "rand-4k50+8k50-r90-qd32", 8192, ""},
	} {
		p := base
		p.ReadPct = c.readPct
		p, err := WithBSSplit(p, c.bssplit)
		if err == nil {
			p, err = WithDistribution(p, c.dist)
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.bssplit, c.dist, err)
			continue
		}
		if p.BSSplit != c.canonical || p.BlockSize != c.largest || p.Distribution != c.canonicalDistName || p.Name() != c.name {
			t.Errorf("%s %s: got %q %d %q %s", c.bssplit, c.dist, p.BSSplit, p.BlockSize, p.Distribution, p.Name())
		}
	}
	// Names of patterns without a mix stay as they were.
	if n := base.Name(); n != "rand-4k-r90-qd32" {
		t.Errorf("plain name %s", n)
	}
}

func TestMixRefused(t *testing.T) {
	for _, s := range []string{"4k/60:16k/30", "4k/60:16k/50", "4k/:8k/:16k/", "4k/60:4k/40", "x/100", "4k/101", "4k/50,", "4k/100,8k/100,16k/100", ""} {
		if _, err := ParseBSSplit(s); !errors.Is(err, ErrBadMix) {
			t.Errorf("bssplit %q: %v", s, err)
		}
	}
	for _, s := range []string{"zipf", "zipf:1", "zipf:-1", "pareto:1", "pareto:0", "normal:100", "zipf:1.2:2", "zoned:60/10:40/90", "uniform:1", "zipf:x"} {
		if _, err := ParseDistribution(s); !errors.Is(err, ErrBadMix) {
			t.Errorf("distribution %q: %v", s, err)
		}
	}
}
