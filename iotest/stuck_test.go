package iotest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// stuckDisk is a FUSE file whose reads, while it is held, wait until it is
// released: a device that stops answering.
type stuckDisk struct {
	testenv.DiskFile

	mu      sync.Mutex
	held    bool
	release chan struct{} // closed by unhold
	waiting atomic.Int32  // reads held now
}

var _ = (fs.NodeReader)((*stuckDisk)(nil))

func (d *stuckDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	d.mu.Lock()
	held, release := d.held, d.release
	d.mu.Unlock()
	if held {
		d.waiting.Add(1)
		defer d.waiting.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, syscall.EINTR
		}
	}
	end := min(off+int64(len(dest)), d.Size)
	clear(dest[:end-off])
	return fuse.ReadResultData(dest[:end-off]), 0
}

// hold makes reads wait from now on.
func (d *stuckDisk) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.held {
		d.held, d.release = true, make(chan struct{})
	}
}

// unhold answers the waiting reads and those to come.
func (d *stuckDisk) unhold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held {
		d.held = false
		close(d.release)
	}
}

// inflight is what the loop device dev has in flight: "READS WRITES".
func inflight(dev string) string {
	b, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/inflight")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// waitIdle waits until the loop device dev has no request in flight: the
// reads a test gave up on have completed after all.
func waitIdle(t *testing.T, dev string) {
	t.Helper()
	testenv.WaitFor(t, 5*time.Second, dev+" idle", func() error {
		if s := inflight(dev); s != "0 0" {
			return fmt.Errorf("in flight: %s", s)
		}
		return nil
	})
}

// waitStuck waits until the loop device dev has reads in flight ("N 0":
// reads N, none written) and the FUSE file holds some: a run on it is
// stuck. It answers the reads if they never come, so that the run can
// end.
func waitStuck(t *testing.T, disk *stuckDisk, dev, reads string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !testenv.Poll(ctx, func() bool { return inflight(dev) == reads && disk.waiting.Load() > 0 }) {
		disk.unhold()
		t.Fatalf("the run never got stuck on %s: %s in flight (want %s), %d reads held", dev, inflight(dev), reads, disk.waiting.Load())
	}
}

// A run cancelled while its device answers nothing returns promptly, with
// ctx's error, on every engine and whether or not the kernel's io_uring
// takes a wait timeout. The given-up reads complete when the device is
// released, into memory that must still be mapped.
func TestCancelOnStuckDevice(t *testing.T) {
	testenv.Integration(t)
	disk := &stuckDisk{DiskFile: testenv.DiskFile{Size: 64 << 20}}
	dev := testenv.FUSELoop(t, disk)
	// Runs before the loop device detaches: a held read would keep it.
	t.Cleanup(disk.unhold)
	tg := openPlan(t, dev, target.Options{})
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")

	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 4, Jobs: 1}
	for _, c := range []struct{ name, engine string }{
		{"uring", EngineUring},
		{"psync", EnginePsync},
	} {
		t.Run(c.name, func(t *testing.T) {
			disk.hold()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := Run(ctx, tg, p, Options{Runtime: 10 * time.Second, Seed: 1, Engine: c.engine})
				errc <- err
			}()
			// Cancelled once every read of its queue is in flight and held.
			waitStuck(t, disk, dev, fmt.Sprint(p.QueueDepth, " 0"))
			cancelled := time.Now()
			cancel()
			var err error
			select {
			case err = <-errc:
			case <-time.After(5 * time.Second):
				// Fail rather than hang: answering the reads lets Run end.
				disk.unhold()
				t.Fatalf("Run still running 5 s after the cancellation; returned %v once the device answered", <-errc)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run returned %v, want context.Canceled", err)
			}
			if d := time.Since(cancelled); d > time.Second {
				t.Errorf("Run returned %v after the cancellation, want within 1 s", d)
			} else {
				t.Logf("returned %v after the cancellation", d.Round(time.Millisecond))
			}
			disk.unhold()
			waitIdle(t, dev)
		})
	}

	// The ring itself gives up, rather than Run leaving it behind: it
	// returns within its grace, keeps its arena mapped, and never counted
	// the given-up reads as completed or failed.
	t.Run("ring-gives-up", func(t *testing.T) {
		disk.hold()
		a, err := newArena(host, p.QueueDepth, p.BlockSize, rand.NewPCG(1, 2), true)
		if err != nil {
			t.Fatal(err)
		}
		var stop atomic.Bool
		started := make(chan struct{})
		close(started)
		w := &worker{st: newStats(1), seq: newSequence(1, 0, 0, p, tg.Size), arena: a, fd: tg.Fd(), qd: p.QueueDepth,
			clk: newTestClock(0, nanotime()+int64(time.Hour)), stop: &stop, ready: func() {}, start: started}
		errc := make(chan error, 1)
		go func() { errc <- w.runUring() }()
		waitStuck(t, disk, dev, fmt.Sprint(p.QueueDepth, " 0"))
		stop.Store(true)
		stopped := time.Now()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("runUring: %v", err)
			}
			if d := time.Since(stopped); d < abandonGrace || d > abandonGrace+300*time.Millisecond {
				t.Errorf("gave up %v after the stop, want just past %v", d, abandonGrace)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("runUring still waiting 2 s after the stop")
		}
		if !a.keep.Load() {
			t.Error("arena of abandoned reads not kept mapped")
		}
		a.free()
		if a.mem == nil {
			t.Error("free unmapped a kept arena")
		}
		if w.st.subReads != uint64(p.QueueDepth) || w.st.allReads != 0 || w.st.badReads != 0 {
			t.Errorf("submitted %d, completed %d, failed %d: want %d reads given up",
				w.st.subReads, w.st.allReads, w.st.badReads, p.QueueDepth)
		}
		disk.unhold()
		waitIdle(t, dev)
	})
}
