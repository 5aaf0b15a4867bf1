package iotest

import (
	"errors"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

func TestPatternValidate(t *testing.T) {
	ok := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 32, Jobs: 1}
	if err := ValidatePattern(ok); err != nil {
		t.Fatalf("valid pattern rejected: %v", err)
	}
	cases := []struct {
		name  string
		mut   func(*results.Pattern)
		field string
	}{
		{"qd 0", func(p *results.Pattern) { p.QueueDepth = 0 }, "queue_depth"},
		{"qd 257", func(p *results.Pattern) { p.QueueDepth = 257 }, "queue_depth"},
		{"bs 0", func(p *results.Pattern) { p.BlockSize = 0 }, "block_size"},
		{"bs 3000", func(p *results.Pattern) { p.BlockSize = 3000 }, "block_size"},
		{"bs 128MiB", func(p *results.Pattern) { p.BlockSize = 128 << 20 }, "block_size"},
		{"read 101", func(p *results.Pattern) { p.ReadPct = 101 }, "read_pct"},
		{"read -1", func(p *results.Pattern) { p.ReadPct = -1 }, "read_pct"},
		{"jobs 0", func(p *results.Pattern) { p.Jobs = 0 }, "jobs"},
		{"jobs 65", func(p *results.Pattern) { p.Jobs = 65 }, "jobs"},
		{"access", func(p *results.Pattern) { p.Access = "zigzag" }, "access"},
		{"buffers", func(p *results.Pattern) { p.BlockSize, p.QueueDepth, p.Jobs = 64<<20, 256, 1 }, "block_size"},
	}
	for _, c := range cases {
		p := ok
		c.mut(&p)
		err := ValidatePattern(p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrBadPattern) {
			t.Errorf("%s: error %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	for _, bs := range []int64{512, 4096, 16384, 64 << 20} {
		p := ok
		p.BlockSize = bs
		if err := ValidatePattern(p); err != nil {
			t.Errorf("bs %d rejected: %v", bs, err)
		}
	}
	// Alignment of the target.
	p := ok
	p.BlockSize = 512
	if err := ValidatePatternFor(p, 4096, 1<<30); err == nil {
		t.Error("512-byte blocks accepted on a 4096-aligned target")
	}
	if err := ValidatePatternFor(ok, 4096, 1024); err == nil {
		t.Error("target smaller than a block accepted")
	}
}

func TestPatternName(t *testing.T) {
	cases := map[string]results.Pattern{
		"rand-4k-r90-qd32":    {Access: results.Random, BlockSize: 4096, ReadPct: 90, QueueDepth: 32, Jobs: 1},
		"seq-read-1m-qd8":     {Access: results.Sequential, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 8, Jobs: 1},
		"seq-write-1m-qd8":    {Access: results.Sequential, BlockSize: 1 << 20, ReadPct: 0, QueueDepth: 8, Jobs: 1},
		"rand-16k-r70-qd1-j8": {Access: results.Random, BlockSize: 16384, ReadPct: 70, QueueDepth: 1, Jobs: 8},
	}
	for want, p := range cases {
		if got := p.Name(); got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{Runtime: time.Second}).Validate(); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
	for _, o := range []Options{{}, {Runtime: time.Second, Ramp: -1}, {Runtime: time.Second, Engine: "aio"}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
