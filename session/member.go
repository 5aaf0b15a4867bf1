package session

import (
	"context"
	"fmt"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// Member is a child of this program in a cgroup of its own, below the
// same parent as the session's: siblings, as the kernel's proportional
// controller (iocost) shares a device among them by their io.weight.
type Member struct{ r *capRunner }

// Member is the session's own child as a Member; nil when the session is
// uncapped (or before Start).
func (s *Session) Member() *Member {
	r := s.runner
	if w, ok := r.(mergesRunner); ok {
		r = w.inner
	}
	if r, ok := r.(*capRunner); ok {
		return &Member{r}
	}
	return nil
}

// AddMember starts another child, on the same target, in a fresh cgroup
// beside the session's, without limits. Close ends it with the session.
func (s *Session) AddMember() (*Member, error) {
	cp := s.o.Cap
	if cp == nil || cp.group == nil || s.child == nil {
		return nil, fmt.Errorf("add a member: the session runs in no cgroup of its own")
	}
	g, err := cgroup.Create(cp.ctrl, cgroup.Limit{Device: cp.limit.Device})
	if err != nil {
		return nil, cgroupError(err)
	}
	child, err := startChild(s.childStderr(), s.childTarget(), g.AddProc, s.o.Notice)
	if err != nil {
		if derr := g.Delete(); derr != nil {
			s.o.Notice(fmt.Sprintf("warning: %v", derr))
		}
		return nil, err
	}
	m := &Member{&capRunner{group: g, child: child, lastActive: time.Now()}}
	s.members = append(s.members, m)
	return m, nil
}

// Run runs one pattern in the member's cgroup.
func (m *Member) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	return m.r.Run(ctx, p, o)
}

// RunAt runs one pattern starting at the moment at, or once the cgroup's
// throttle has been quiet long enough if that is later (see capRunner).
// Members started at one moment measure the same window.
func (m *Member) RunAt(ctx context.Context, at time.Time, p results.Pattern, o iotest.Options) (results.Result, error) {
	return m.r.run(ctx, at, p, o)
}

// Path is the member's cgroup directory.
func (m *Member) Path() string { return m.r.group.Path }

// SetLimit replaces the member's io.max (or blkio throttle) limits on
// the target's device; an empty limit lifts them.
func (m *Member) SetLimit(l cgroup.Limit) error {
	defer func() { m.r.lastActive = time.Now() }()
	return m.r.group.SetLimit(l)
}

// SetWeight sets the member's io.weight.
func (m *Member) SetWeight(w int) error { return m.r.group.SetWeight(w) }

// Limit is the member's limit in force.
func (m *Member) Limit() cgroup.Limit { return m.r.group.Limit }

// close ends the child, then removes the cgroup.
func (m *Member) close(notice func(string)) {
	_ = m.r.child.Close() // every result is in; the cgroup goes next
	if err := m.r.group.Delete(); err != nil {
		notice(fmt.Sprintf("warning: %v", err))
	}
}
