package pattern

import (
	"errors"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestPatternValidate(t *testing.T) {
	ok := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 32, Jobs: 1}
	if err := Validate(ok); err != nil {
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
		// A mix's largest size is the block size: its faults are the mix's.
		{"mix size 128MiB", func(p *results.Pattern) { p.BSSplit, p.BlockSize = "4k/50:128m/50", 128<<20 }, "bssplit"},
		{"compress 101", func(p *results.Pattern) { p.Compress = 101 }, "compress_pct"},
		{"dedupe -1", func(p *results.Pattern) { p.Dedupe = -1 }, "dedupe_pct"},
		{"compress reads", func(p *results.Pattern) { p.ReadPct, p.Compress = 100, 50 }, "compress_pct"},
		{"dedupe reads", func(p *results.Pattern) { p.ReadPct, p.Dedupe = 100, 50 }, "dedupe_pct"},
		{"mix buffers", func(p *results.Pattern) { p.BSSplit, p.BlockSize, p.QueueDepth = "4k/50:64m/50", 64<<20, 256 }, "bssplit"},
	}
	for _, c := range cases {
		p := ok
		c.mut(&p)
		err := Validate(p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrBadPattern) {
			t.Errorf("%s: error %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	for _, bs := range []int64{512, 4096, 16384, 64 << 20} {
		p := ok
		p.BlockSize = bs
		if err := Validate(p); err != nil {
			t.Errorf("bs %d rejected: %v", bs, err)
		}
	}
	for _, c := range []struct{ compress, dedupe int }{{0, 100}, {100, 0}, {50, 50}, {1, 99}} {
		p := ok
		p.Compress, p.Dedupe = c.compress, c.dedupe
		if err := Validate(p); err != nil {
			t.Errorf("compress %d dedupe %d rejected: %v", c.compress, c.dedupe, err)
		}
	}
	// Alignment of the target.
	p := ok
	p.BlockSize = 512
	if err := CheckTarget(p, 4096, 1<<30); err == nil {
		t.Error("512-byte blocks accepted on a 4096-aligned target")
	}
	if err := CheckTarget(ok, 4096, 1024); err == nil {
		t.Error("target smaller than a block accepted")
	}
}

func TestValidateSync(t *testing.T) {
	w := results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 1}
	for _, c := range []struct {
		sync string
		read int
		qd   int
		ok   bool
	}{
		{"", 0, 8, true}, {"dsync", 0, 32, true}, {"dsync", 99, 1, true}, {"fdatasync:1", 0, 1, true}, {"fsync:16", 50, 1, true}, {"fdatasync:1:after", 0, 1, true},
		{"fdatasync:1.46:after", 0, 1, true}, {"fdatasync:4.14:after", 0, 1, true}, {"fsync:2.5", 0, 1, true}, {"fdatasync:1.50", 0, 1, false}, {"fdatasync:0.5", 0, 1, false},
		{"dsync", 100, 1, false}, {"fdatasync:1", 0, 2, false}, {"fdatasync", 0, 1, false}, {"fsync:01", 0, 1, false}, {"none", 0, 1, false},
		{"fdatasync:1:after", 0, 4, false}, {"fdatasync:1:AFTER", 0, 1, false}, {"fdatasync:1:linked", 0, 1, false}, {"dsync:1:after", 0, 1, false},
	} {
		p := w
		p.Sync, p.ReadPct, p.QueueDepth = c.sync, c.read, c.qd
		if err := Validate(p); (err == nil) != c.ok || err != nil && !IsField(err, "sync") {
			t.Errorf("%q r%d qd%d: %v, want ok %v", c.sync, c.read, c.qd, err, c.ok)
		}
	}
	names := map[string]string{"dsync": "seq-write-4k-qd1-dsync", "fdatasync:1": "seq-write-4k-qd1-fdatasync1", "fsync:8": "seq-write-4k-qd1-fsync8", "fdatasync:1:after": "seq-write-4k-qd1-fdatasync1after",
		"fdatasync:1.46:after": "seq-write-4k-qd1-fdatasync1.46after"}
	for sync, name := range names {
		p := w
		p.Sync = sync
		if p.Name() != name {
			t.Errorf("%s: name %s, want %s", sync, p.Name(), name)
		}
	}
}
