package iotest

import (
	"math/bits"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Durable writes (results.Pattern.Sync). dsync flags each write
// (RWF_DSYNC): the write completes once it is durable, and its latency
// holds the wait. fdatasync:N and fsync:N follow every N-th write of a
// stream with a sync of the file: on a ring, a FSYNC request linked
// after the write (IOSQE_IO_LINK), submitted with it, which the kernel
// starts once the write is done, or with :after a request issued once
// the write's completion is reaped (a database's write, then its
// fdatasync; fio's way); with psync, the call after the write.
// Either way the write is accounted when its sync completes, with its
// latency from the write's start: a commit's wait. Only that N-th write
// carries the sync's wait; the others are plain writes. A stream has one
// write in flight (pattern.Validate refuses QD > 1 with a sync of its
// own), so the sync covers every write of the stream before it.

// syncData marks the completion of a slot's linked sync: its user data
// is the slot's index, with the slot's link generation (slot.gen) in the
// bits from syncGenShift.
const (
	syncData     = uint64(1) << 62
	syncGenShift = 32
	slotMask     = uint64(1)<<syncGenShift - 1
)

// syncUserData is the user data of slot i's sync of generation gen.
func syncUserData(i int, gen uint8) uint64 { return syncData | uint64(gen)<<syncGenShift | uint64(i) }

// syncStats are a stream's syncs: submitted, completed and failed over
// the whole run, and their own latency (from the write's completion to
// the sync's) in the window; hist is nil without syncs.
type syncStats struct {
	submitted, done, failed uint64
	hist                    *hist.Histogram
}

// newSyncHist is a sync latency histogram with its pages touched, as
// newStats does for the others.
func newSyncHist() *hist.Histogram {
	h := new(hist.Histogram)
	h.Touch()
	return h
}

// synced books a sync that completed at now, lat after its write did.
func (s *stats) synced(c *clock, lat, now int64) {
	s.sync.done++
	rampEnd := c.rampEnd.Load()
	if now < rampEnd || now >= c.end.Load() || s.sync.hist == nil {
		return
	}
	if rampEnd != s.window {
		s.restartWindow(rampEnd)
	}
	s.sync.hist.Record(lat)
}

// syncFailed records a sync that failed with res (-errno) after its
// write at off was done: the write counts as failed too (it was never
// made durable), so that every submitted write is completed or failed.
func (s *stats) syncFailed(kind string, off int64, res int) {
	s.sync.failed++
	s.badWrites++
	if s.err == nil {
		errno := syscall.Errno(-res)
		s.err = &results.IOError{Op: kind, Offset: off, Errno: int(errno), Msg: errno.Error()}
	}
}

// merge adds o's syncs into s.
func (s *syncStats) merge(o *syncStats) {
	s.submitted += o.submitted
	s.done += o.done
	s.failed += o.failed
	if o.hist != nil {
		if s.hist == nil {
			s.hist = new(hist.Histogram)
		}
		s.hist.Merge(o.hist)
	}
}

// result is the result's Syncs: nil for a pattern without syncs.
func (s *syncStats) result() *results.SyncStats {
	if s.hist == nil && s.submitted == 0 {
		return nil
	}
	r := &results.SyncStats{Submitted: s.submitted, Completed: s.done, Failed: s.failed}
	if s.hist != nil {
		r.LatNS = results.Summarize(s.hist)
	}
	return r
}

// syncDue counts a write of the stream and tells whether a sync follows
// it: every sync.Every-th write, with fdatasync:N or fsync:N; on average
// when N is not whole, the writes since the last sync keeping what is
// left of them once N is taken.
func (w *worker) syncDue() bool {
	if w.sync.Every == 0 {
		return false
	}
	w.sinceSync++
	if w.sinceSync < w.sync.Every {
		return false
	}
	w.sinceSync -= w.sync.Every
	w.st.sync.submitted++
	return true
}

// syncSlot queues slot i's sync, linked after the write just queued.
func (s *ringStream) syncSlot(i int) {
	s.r.last().flags |= uringSqeLink
	s.queueSync(i)
}

// queueSync queues slot i's sync of its current generation: linked by
// syncSlot; on its own once the write has completed (the :after form),
// or again after the kernel cancelled it (see syncCompletion). The next
// submission hands it over.
func (s *ringStream) queueSync(i int) {
	s.r.prepSync(s.w.sync.Kind == pattern.SyncFdatasync, syncUserData(i, s.slots[i].gen))
}

// syncCompletion reads the completion of slot i's sync: done (the write
// is then done too), issued again (the kernel cancelled it on its own,
// see reissue), failed, or stale: cancelled with a write that failed or
// was issued again, whose completion counted it.
func (s *ringStream) syncCompletion(i int, cqe *uringCqe, now int64) completion {
	sl := &s.slots[i]
	if uint8(cqe.userData>>syncGenShift) != sl.gen || !sl.synced {
		return syncStale
	}
	switch {
	case cqe.res == 0:
		s.w.st.synced(s.w.clk, now-sl.wrote, now)
		return ioDone
	case cqe.res == -int32(unix.ECANCELED) && sl.reissues < maxReissues:
		// The write is done: the sync alone goes again.
		sl.reissues++
		s.queueSync(i)
		return ioReissued
	}
	s.w.st.syncFailed(s.w.sync.Kind, sl.off, int(cqe.res))
	return ioFailed
}

// psyncWrite writes buf at off as the pattern asks: with RWF_DSYNC for
// dsync, followed by the file's sync when one is due. wrote is when the
// write itself returned; a failed sync is syncErr, the write's err.
func (w *worker) psyncWrite(buf []byte, off int64) (n int, wrote int64, syncErr, err error) {
	if w.sync.Kind == pattern.SyncDsync {
		n, err = w.pwriteDsync(buf, off)
	} else {
		n, err = pwrite(w.fd, buf, off)
	}
	if err != nil || n != len(buf) || !w.syncDue() {
		return n, 0, nil, err
	}
	wrote = nanotime()
	if w.sync.Kind == pattern.SyncFdatasync {
		syncErr = retryEINTRNoArgs(unix.Fdatasync, w.fd)
	} else {
		syncErr = retryEINTRNoArgs(unix.Fsync, w.fd)
	}
	return n, wrote, syncErr, nil
}

// pwriteDsync is pwritev2(RWF_DSYNC) of one buffer, through the worker's
// own iovec: x/sys's Pwritev2 builds a slice per call.
func (w *worker) pwriteDsync(b []byte, off int64) (int, error) {
	w.iov.Base = &b[0]
	w.iov.SetLen(len(b))
	half := bits.UintSize / 2
	for {
		n, _, errno := unix.Syscall6(unix.SYS_PWRITEV2, uintptr(w.fd), uintptr(unsafe.Pointer(&w.iov)), 1,
			uintptr(off), uintptr(uint64(off)>>half>>half), unix.RWF_DSYNC)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return int(n), errno
	}
}

// retryEINTRNoArgs repeats a call on fd a signal interrupted.
func retryEINTRNoArgs(op func(int) error, fd int) error {
	for {
		if err := op(fd); err != unix.EINTR {
			return err
		}
	}
}

// CheckSync refuses, before any I/O, durable writes the options cannot
// issue: a polled ring (IOPOLL) takes only reads and writes, no FSYNC
// request, and its writes complete by polling, which RWF_DSYNC's
// completion path does not serve.
func CheckSync(p results.Pattern, o Options) error {
	if p.Sync != "" && o.Ring.Poll {
		return pattern.Mention("poll", func(n fault.Namer) string {
			return "a polled ring (IOPOLL) cannot make writes durable: not with " + n("sync") + " " + p.Sync
		})
	}
	return nil
}

// The most of the disk's requests and bytes beyond a cell's own that one
// durable point (a sync, or a dsync write) is taken to explain: its flush,
// which a blk-mq disk also counts as a write request of no data, and a
// journal commit. Measured on ext4 over a loop device (4K sequential
// writes at QD1): 1.00 request per fdatasync, 1.14 and 1.7 KB per fsync,
// 1.00 per dsync write.
const (
	journalIOsPerSync   = 4
	journalBytesPerSync = 64 << 10
)

// syncShare sets dev's SyncIOs and SyncBytes: the requests and bytes
// beyond the cell's own its durable points in the window explain, up to
// journalIOsPerSync and journalBytesPerSync each.
func syncShare(dev *results.DevStats, p results.Pattern, s *stats) {
	var points uint64
	switch {
	case p.Sync == "":
		return
	case s.sync.hist != nil:
		points = s.sync.hist.Count()
	default:
		points = s.writeIOs // dsync: every write
	}
	dev.SyncIOs = min(dev.OtherIOs, points*journalIOsPerSync)
	dev.SyncBytes = min(dev.OtherBytes, points*journalBytesPerSync)
}
