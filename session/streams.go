package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// Stream is one of several patterns measured at once (RunStreams), with
// its own options and, when Cap is set, in a cgroup of its own. Each
// stream runs in a process of its own, as the systems it stands for do:
// open-loop streams sharing one process were measured late by tens of
// milliseconds at a few thousand IOPS each on two cores, where the same
// streams in processes of their own kept within about 2 ms.
type Stream struct {
	Pattern results.Pattern
	Options iotest.Options
	// Cap is the stream's cgroup, planned by PlanStreamCaps; nil runs the
	// stream uncapped.
	Cap *CapPlan
}

// StreamResult is a stream's result, and the cgroup it ran in (nil when
// uncapped).
type StreamResult struct {
	Result results.Result
	Cap    *results.Cap
}

// streamLead is how long before the common start the streams are told
// of it: time for every child to read its request.
const streamLead = 100 * time.Millisecond

// PlanStreamCaps plans a fresh cgroup for each limit on target's device
// (read in sys), touching nothing (as Prepare does for one cap), and
// aligns o's window to the kernel's throttle, telling notice when it
// differs from what was asked. A notice of the device (a partition's
// disk) is given once.
func PlanStreamCaps(sys sysfs.FS, target string, limits []cgroup.Limit, o *iotest.Options, notice func(string)) ([]*CapPlan, error) {
	plans := make([]*CapPlan, len(limits))
	for i := range limits {
		say := notice
		if i > 0 {
			say = func(string) {}
		}
		cp, err := planCap(sys, CapRequest{Limit: &limits[i]}, target, say)
		if err != nil {
			return nil, err
		}
		plans[i] = cp
	}
	if len(plans) > 0 {
		if msg := alignToThrottle(o); msg != "" {
			notice(msg)
		}
	}
	return plans, nil
}

// RunStreams measures every stream at once, each from the same moment,
// each in a child of this program; a capped stream's child goes into its
// own cgroup, made for this run and deleted after it, before its first
// I/O (as Start does for one).
// Their windows start together, after the throttle's quiet time, so that
// each cgroup's first slice begins with its stream. A stream that fails
// stops the others; the first failure is returned.
func (s *Session) RunStreams(ctx context.Context, streams []Stream) ([]StreamResult, error) {
	var children []*childRunner
	var made []*CapPlan
	defer func() {
		// How a child ended changes nothing now: the results are in hand
		// or the run failed, and its cgroup goes next.
		for _, c := range children {
			_ = c.Close()
		}
		for _, cp := range made {
			cp.release(s.o.Notice)
		}
	}()
	var stderr io.Writer = io.Discard
	if s.o.ChildStderr != nil {
		// Every child's stderr is copied by a goroutine of its own: one
		// writer at a time.
		stderr = &lockedWriter{w: s.o.ChildStderr}
	}
	runners := make([]*childRunner, len(streams))
	for i, st := range streams {
		place := func(int) error { return nil }
		if st.Cap != nil {
			if err := st.Cap.create(); err != nil {
				return nil, err
			}
			made = append(made, st.Cap)
			place = st.Cap.group.AddProc
		}
		ct := childTarget{Path: s.o.Plan.Path, Size: s.t.Size, Writes: st.Pattern.Writes(), AllowDestructive: s.o.AllowDestructive}
		if s.o.Plan.Action == target.ActionReadOnly {
			ct.Size = 0 // somebody else's file is read at its own size
		}
		child, err := startChild(stderr, ct, place, s.o.Notice)
		if err != nil {
			return nil, fmt.Errorf("stream %d (%s): %w", i+1, st.Pattern.Name(), err)
		}
		children = append(children, child)
		runners[i] = child
	}
	// Every limit is set by now: one quiet time from here, the throttle
	// starts a fresh slice with each group's first I/O.
	start := time.Now().Add(max(cgroup.ThrottleQuiet, streamLead))
	if len(made) == 0 {
		start = time.Now().Add(streamLead)
	}
	before := make([]*cgroup.Counters, len(streams))
	for i, st := range streams {
		if st.Cap != nil {
			if c, err := st.Cap.group.Counters(); err == nil {
				before[i] = &c
			}
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make([]StreamResult, len(streams))
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			out[i].Result, err = runners[i].runAt(ctx, start, st.Pattern, st.Options)
			if err != nil {
				errs[i] = fmt.Errorf("stream %d (%s): %w", i+1, st.Pattern.Name(), err)
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	for i, st := range streams {
		if st.Cap == nil {
			continue
		}
		out[i].Cap = st.Cap.group.Limit.Record(st.Cap.group.Version(), st.Cap.group.Path)
		if after, err := st.Cap.group.Counters(); err == nil && before[i] != nil && out[i].Result.Name != "" {
			out[i].Result.CgroupIOs = &results.Counts{Reads: after.ReadIOs - before[i].ReadIOs, Writes: after.WriteIOs - before[i].WriteIOs}
		}
	}
	// The first failure caused the others' cancellation: it is the one
	// worth telling.
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return out, err
	}
	return out, errors.Join(errs...)
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
