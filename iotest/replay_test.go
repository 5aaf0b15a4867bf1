package iotest

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/iotest/trace"
)

// syntheticTrace is n I/Os at rate per second, 60 % reads, 4 KiB and
// 16 KiB, at random offsets below size.
func syntheticTrace(n int, rate float64, size int64) *trace.Trace {
	rng := rand.New(rand.NewPCG(1, 2))
	tr := &trace.Trace{Format: trace.FormatIolog3, Device: "/dev/x"}
	for i := range n {
		bs := int64(4096)
		if rng.IntN(4) == 0 {
			bs = 16384
		}
		tr.IOs = append(tr.IOs, trace.IO{At: int64(float64(i) * 1e9 / rate), Offset: rng.Int64N(size/bs) * bs, Size: bs, Write: rng.IntN(10) >= 6})
	}
	return tr
}

func TestPlanReplayMapsOffsets(t *testing.T) {
	tr := &trace.Trace{IOs: []trace.IO{
		{At: 0, Offset: 4096, Size: 4096},               // as recorded
		{At: 2e9, Offset: 1<<20 + 8192, Size: 4096},     // beyond: modulo
		{At: 3e9, Offset: 1<<20 - 4096, Size: 8192},     // crosses the end: moved back
		{At: 4e9, Offset: 512, Size: 1024, Write: true}, // unaligned
		{At: 5e9, Offset: 3<<20 - 2048, Size: 4096},     // both
	}}
	pl, err := PlanReplay(tr, "t.log", 1<<20+100, 4096, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []replayIO{{0, 4096, 4096, false, 0}, {1e9, 8192, 4096, false, 0}, {15e8, 1<<20 - 8192, 8192, false, 2},
		{2e9, 0, 4096, true, 1}, {25e8, 1<<20 - 4096, 4096, false, 0}}
	for i, io := range pl.ios {
		if io != want[i] {
			t.Errorf("I/O %d: %+v, want %+v", i, io, want[i])
		}
	}
	if pl.rec.Wrapped != 3 || pl.rec.Realigned != 2 || pl.p.ReadPct != 80 || pl.p.BlockSize != 8192 || pl.p.QueueDepth != 4 {
		t.Errorf("record %+v pattern %+v", pl.rec, pl.p)
	}
	for _, c := range []struct {
		size, align int64
		speed       float64
		depth       int
		field, msg  string
	}{
		{1 << 20, 4096, 0, 4, "speed", ""},
		{1 << 20, 4096, 1, 0, "queue_depth", ""},
		{4096, 4096, 1, 4, "", "larger than the target"},
	} {
		_, err := PlanReplay(tr, "t.log", c.size, c.align, c.speed, c.depth)
		if err == nil || (c.field != "" && !pattern.IsField(err, c.field)) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A replay issues every I/O of the trace at its time: the I/Os, their
// sizes and directions are the trace's, and so are the counts of each
// second.
func TestReplayOnFile(t *testing.T) {
	testenv.Root(t)
	engines(t)
	path := filepath.Join(testenv.DirectIODir(t), "replay.dat")
	tg := openPlan(t, path, target.Options{Size: 64 << 20, Writes: true})
	tr := syntheticTrace(3000, 1000, tg.Size)
	pl, err := PlanReplay(tr, "synthetic.log", tg.Size, 4096, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(context.Background(), tg, pl, Options{Engine: EngineUring, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rp := r.Replay
	if r.Total.IOs != 3000 || r.Read.IOs != tr.Reads() || rp == nil || rp.IOs != 3000 || r.Name != "replay-synthetic.log" {
		t.Fatalf("%d I/Os (%d reads), replay %+v", r.Total.IOs, r.Read.IOs, rp)
	}
	if r.Read.Bytes != rp.ReadBytes || r.Write.Bytes != rp.WriteBytes {
		t.Errorf("bytes %d/%d, the trace's %d/%d", r.Read.Bytes, r.Write.Bytes, rp.ReadBytes, rp.WriteBytes)
	}
	for _, s := range rp.Sizes {
		if s.ReadIOs != s.TraceReads || s.WriteIOs != s.TraceWrites {
			t.Errorf("size %d: %+v", s.Size, s)
		}
	}
	t.Logf("per second %v, the trace's %v; lateness p99 %d ns", rp.PerSecond, rp.TracePerSecond, r.Rate.LatenessNS.P99)
	for i, want := range rp.TracePerSecond {
		if i >= len(rp.PerSecond) || absDiff(rp.PerSecond[i], want) > want/100+1 {
			t.Errorf("second %d: %v, the trace's %v", i, rp.PerSecond, rp.TracePerSecond)
			break
		}
	}
	if r.Rate == nil || r.Rate.Arrival != "trace" || r.Read.ResponseLatNS == nil {
		t.Errorf("open-loop figures missing: %+v", r.Rate)
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
