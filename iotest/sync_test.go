package iotest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// syncStream is a ring stream of one slot whose write carries a linked
// fdatasync, for feeding it completions by hand: nothing is submitted.
func syncStream(t *testing.T) *ringStream { return syncStreamAfter(t, false) }

// syncStreamAfter is syncStream, with the sync issued after the write
// when after is set (fdatasync:1:after).
func syncStreamAfter(t *testing.T, after bool) *ringStream {
	t.Helper()
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	r, err := newUring(4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	w := &worker{st: newStats(1), clk: &clock{}, sync: pattern.Sync{Kind: pattern.SyncFdatasync, Every: 1, After: after}}
	w.clk.end.Store(1 << 62)
	s := &ringStream{w: w, r: r, bufs: [][]byte{make([]byte, 4096)}, slots: make([]slot, 1)}
	s.slots[0] = slot{size: 4096, write: true, off: 8192}
	s.slots[0].synced = w.syncDue()
	s.issue(0)
	return s
}

// cqe is a completion of slot 0's write, or of its sync of generation gen.
func cqe(sync bool, gen uint8, res int32) *uringCqe {
	if sync {
		return &uringCqe{userData: syncUserData(0, gen), res: res}
	}
	return &uringCqe{res: res}
}

// A write that fails cancels the sync linked after it: the write's failure
// is counted once, the cancelled sync is no second failure, nor a sync
// issued again as io-wq's own cancellations are.
func TestLinkedSyncOfAFailedWrite(t *testing.T) {
	s := syncStream(t)
	ecanceled, eio := -int32(unix.ECANCELED), -int32(unix.EIO)
	if _, c := s.completion(cqe(false, 0, eio), 10); c != ioFailed {
		t.Fatalf("failed write: %v", c)
	}
	if _, c := s.completion(cqe(true, 0, ecanceled), 11); c != syncStale {
		t.Fatalf("its cancelled sync: %v, want stale", c)
	}
	st := s.w.st
	if st.badWrites != 1 || st.sync.failed != 0 || st.sync.done != 0 || st.sync.submitted != 1 || st.reWrites != 0 {
		t.Errorf("bad writes %d, syncs failed %d done %d submitted %d, reissued %d", st.badWrites, st.sync.failed, st.sync.done, st.sync.submitted, st.reWrites)
	}
	if st.err == nil || st.err.Op != "write" || st.err.Errno != int(unix.EIO) {
		t.Errorf("error %+v", st.err)
	}
}

// A write io-wq cancelled on its own goes again with a new sync; the old
// sync's cancellation is stale, the new pair completes the write.
func TestLinkedSyncOfAReissuedWrite(t *testing.T) {
	s := syncStream(t)
	ecanceled := -int32(unix.ECANCELED)
	for _, step := range []struct {
		c    *uringCqe
		want completion
	}{
		{cqe(false, 0, ecanceled), ioReissued},
		{cqe(true, 0, ecanceled), syncStale},
		{cqe(false, 0, 4096), ioHeld},
		{cqe(true, 1, ecanceled), ioReissued}, // the sync alone, cancelled by io-wq
		{cqe(true, 1, 0), ioDone},
	} {
		if _, c := s.completion(step.c, 100); c != step.want {
			t.Fatalf("cqe %+v: %v, want %v", *step.c, c, step.want)
		}
	}
	st := s.w.st
	if st.badWrites != 0 || st.sync.done != 1 || st.sync.failed != 0 || st.reWrites != 1 {
		t.Errorf("bad writes %d, syncs done %d failed %d, reissued %d", st.badWrites, st.sync.done, st.sync.failed, st.reWrites)
	}
}

// With :after, the write is submitted alone; its completion queues the
// sync, whose completion completes the write. A write that fails has no
// sync: none is counted as submitted.
func TestSyncAfterTheWrite(t *testing.T) {
	s := syncStreamAfter(t, true)
	if s.r.pending != 1 || s.r.sqes[0].flags&uringSqeLink != 0 {
		t.Fatalf("the write alone, unlinked: %d pending, flags %#x", s.r.pending, s.r.sqes[0].flags)
	}
	if _, c := s.completion(cqe(false, 0, 4096), 10); c != ioHeld {
		t.Fatalf("write: %v, want held", c)
	}
	if sq := s.r.sqes[1]; s.r.pending != 2 || sq.opcode != uringOpFsync || sq.userData != syncUserData(0, 0) || sq.rwFlags != uringFsyncDatasync {
		t.Fatalf("its sync is not queued once it completed: %d pending, %+v", s.r.pending, sq)
	}
	if _, c := s.completion(cqe(true, 0, 0), 30); c != ioDone {
		t.Fatalf("sync: %v, want done", c)
	}
	st := s.w.st
	if st.sync.submitted != 1 || st.sync.done != 1 || st.badWrites != 0 {
		t.Errorf("syncs submitted %d done %d, bad writes %d", st.sync.submitted, st.sync.done, st.badWrites)
	}

	s = syncStreamAfter(t, true)
	if _, c := s.completion(cqe(false, 0, -int32(unix.EIO)), 10); c != ioFailed {
		t.Fatalf("failed write: %v", c)
	}
	if st := s.w.st; s.r.pending != 1 || st.sync.submitted != 0 || st.badWrites != 1 || st.sync.failed != 0 {
		t.Errorf("after a failed write: %d pending, syncs submitted %d failed %d, bad writes %d", s.r.pending, st.sync.submitted, st.sync.failed, st.badWrites)
	}
}

// A sync that fails fails its write: both are counted, once each.
func TestLinkedSyncFails(t *testing.T) {
	s := syncStream(t)
	if _, c := s.completion(cqe(false, 0, 4096), 10); c != ioHeld {
		t.Fatalf("write: %v", c)
	}
	if _, c := s.completion(cqe(true, 0, -int32(unix.EIO)), 11); c != ioFailed {
		t.Fatalf("sync: %v", c)
	}
	st := s.w.st
	if st.badWrites != 1 || st.sync.failed != 1 || st.err == nil || st.err.Op != "fdatasync" || st.err.Offset != 8192 {
		t.Errorf("bad writes %d, syncs failed %d, error %+v", st.badWrites, st.sync.failed, st.err)
	}
}

// On a block device, each fdatasync reaches the disk as a flush, and each
// dsync write too where the disk has no FUA (a loop device has none: the
// block layer follows the write with a flush). The syncs are counted.
func TestDurableWritesFlushTheDisk(t *testing.T) {
	dev := testenv.RAMDisk(t, 64<<20)
	fua, _ := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "queue/fua"))
	for _, eng := range engines(t) {
		for _, sync := range []string{"fdatasync:1", "fdatasync:1:after", "fsync:4", "fdatasync:1.5:after", "dsync"} {
			tg := openPlan(t, dev, target.Options{Writes: true, AllowDestructive: true})
			p := results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 1, Sync: sync}
			r, err := Run(context.Background(), tg, p, Options{Runtime: time.Minute, MaxIOs: 2000, Seed: 1, Engine: eng})
			_ = tg.Close()
			if err != nil {
				t.Fatal(err)
			}
			writes := r.Write.IOs
			t.Logf("%s %s: %d writes, %d flushes, %d requests, syncs %+v", eng, sync, writes, r.Device.Flushes, r.Device.IOs, r.Syncs)
			every := pattern.SyncOf(p).Every
			if every == 0 {
				if r.Syncs != nil {
					t.Errorf("%s %s: syncs %+v", eng, sync, r.Syncs)
				}
				if string(fua) == "0\n" && r.Device.Flushes < writes {
					t.Errorf("%s %s: %d flushes for %d writes on a disk without FUA", eng, sync, r.Device.Flushes, writes)
				}
				continue
			}
			want := uint64(float64(r.Completed.Writes) / every)
			if s := r.Syncs; s == nil || s.Submitted != want || s.Completed != want || s.Failed != 0 || s.LatNS.Count != uint64(float64(writes)/every) {
				t.Errorf("%s %s: syncs %+v, want %d", eng, sync, r.Syncs, want)
			}
			if r.Device.Flushes < uint64(float64(writes)/every) {
				t.Errorf("%s %s: %d flushes for %d syncs", eng, sync, r.Device.Flushes, uint64(float64(writes)/every))
			}
		}
	}
}

// A sync follows every N-th write, on average when N is not whole: at
// 1.5, the 2nd and 3rd of every three writes; at 2.5, the 3rd and 5th
// of every five; at 3, every third.
func TestSyncDue(t *testing.T) {
	for _, c := range []struct {
		every float64
		want  string
	}{{1, "ssssss"}, {1.5, "-ss-ss"}, {3, "--s--s"}, {2.5, "--s-s-"}} {
		w := &worker{st: newStats(1), sync: pattern.Sync{Kind: pattern.SyncFdatasync, Every: c.every}}
		var got []byte
		for range 6 {
			if w.syncDue() {
				got = append(got, 's')
			} else {
				got = append(got, '-')
			}
		}
		if string(got) != c.want || w.st.sync.submitted != uint64(strings.Count(c.want, "s")) {
			t.Errorf("every %v: %s, %d submitted, want %s", c.every, got, w.st.sync.submitted, c.want)
		}
	}
	// 1,000 writes at 1.46: 684 syncs (1,000 / 1.46 = 684.9).
	w := &worker{st: newStats(1), sync: pattern.Sync{Kind: pattern.SyncFdatasync, Every: 1.46}}
	for range 1000 {
		w.syncDue()
	}
	if w.st.sync.submitted != 684 {
		t.Errorf("1,000 writes at 1.46: %d syncs", w.st.sync.submitted)
	}
}
