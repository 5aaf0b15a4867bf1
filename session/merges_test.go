package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// mergesFixture is a disk's queue under a sysfs root of the test's own,
// and the profile's one 4K cell that asks for nomerges=1.
type mergesFixture struct {
	file, state string
	sys         sysfs.FS
	cell, other results.Pattern
	profile     *profiles.Profile
	notices     []string
}

func newMergesFixture(t *testing.T, value string) *mergesFixture {
	t.Helper()
	root := t.TempDir()
	q := filepath.Join(root, "sys", "block", "loop7", "queue")
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &mergesFixture{file: filepath.Join(q, "nomerges"), state: filepath.Join(root, "run"),
		sys:   sysfs.NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc")),
		cell:  results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 64, Jobs: 1},
		other: results.Pattern{Access: results.Sequential, BlockSize: 64 << 20, ReadPct: 100, QueueDepth: 1, Jobs: 1}}
	f.profile = &profiles.Profile{Patterns: []results.Pattern{f.other, f.cell}, Nomerges: []profiles.Nomerges{{Shape: f.cell, Value: 1}}}
	f.write(t, value)
	return f
}

func (f *mergesFixture) write(t *testing.T, v string) {
	t.Helper()
	if err := os.WriteFile(f.file, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *mergesFixture) value(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (f *mergesFixture) merges(t *testing.T, keep bool) *Merges {
	t.Helper()
	m, err := PlanMerges(MergesRequest{Sys: f.sys, Plan: &target.Plan{Info: results.TargetInfo{Path: "/dev/loop7", Kind: "block", Disk: "loop7"}},
		Profile: f.profile, Keep: keep, StateDir: f.state, Notice: func(s string) { f.notices = append(f.notices, s) }})
	if err != nil || m == nil {
		t.Fatalf("PlanMerges: %v, %v", m, err)
	}
	return m
}

func (f *mergesFixture) stateLeft() bool {
	_, err := os.Stat(filepath.Join(f.state, "nomerges-loop7.json"))
	return err == nil
}

// runnerFunc is a Runner that is a function.
type runnerFunc func(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error)

func (r runnerFunc) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	return r(ctx, p, o)
}

// during runs a cell that records the disk's value while it runs.
func (f *mergesFixture) during(t *testing.T, seen *string, err error) Runner {
	return runnerFunc(func(_ context.Context, p results.Pattern, _ iotest.Options) (results.Result, error) {
		*seen = f.value(t)
		return results.Result{Name: p.Name()}, err
	})
}

func TestMergesSetForTheCellAndPutBack(t *testing.T) {
	f := newMergesFixture(t, "0")
	var seen string
	r := f.merges(t, false).Wrap(f.during(t, &seen, nil))
	res, err := r.Run(context.Background(), f.cell, iotest.Options{})
	if err != nil || seen != "1" || f.value(t) != "0" || f.stateLeft() {
		t.Fatalf("err %v, during %q, after %q, state left %v", err, seen, f.value(t), f.stateLeft())
	}
	if want := (results.Nomerges{Disk: "loop7", Asked: 1, Value: 1}); res.Nomerges == nil || *res.Nomerges != want {
		t.Errorf("recorded %+v, want %+v", res.Nomerges, want)
	}
	// The profile's open-loop load of the cell runs with it too.
	load := f.cell
	load.Rate = results.Rate{IOPS: 1000}
	if res, _ := r.Run(context.Background(), load, iotest.Options{}); seen != "1" || res.Nomerges == nil {
		t.Errorf("load: during %q, recorded %+v", seen, res.Nomerges)
	}
	// A cell that asks nothing leaves the disk alone and records nothing.
	if res, _ := r.Run(context.Background(), f.other, iotest.Options{}); seen != "0" || res.Nomerges != nil {
		t.Errorf("other cell: during %q, recorded %+v", seen, res.Nomerges)
	}
	if len(f.notices) != 0 {
		t.Errorf("notices %q", f.notices)
	}
}

func TestMergesPutBackAfterAnError(t *testing.T) {
	f := newMergesFixture(t, "2")
	var seen string
	ioErr := errors.New("input/output error")
	res, err := f.merges(t, false).Wrap(f.during(t, &seen, ioErr)).Run(context.Background(), f.cell, iotest.Options{})
	if !errors.Is(err, ioErr) || res.Nomerges == nil || seen != "1" || f.value(t) != "2" || f.stateLeft() {
		t.Fatalf("err %v, recorded %+v, during %q, after %q, state left %v", err, res.Nomerges, seen, f.value(t), f.stateLeft())
	}
}

// An interruption (the signals cancel the context) ends the cell, and the
// value is put back on the way out.
func TestMergesPutBackOnInterruption(t *testing.T) {
	f := newMergesFixture(t, "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen string
	cell := runnerFunc(func(ctx context.Context, p results.Pattern, _ iotest.Options) (results.Result, error) {
		seen = f.value(t)
		cancel() // SIGINT mid-cell
		<-ctx.Done()
		return results.Result{}, ctx.Err()
	})
	if _, err := f.merges(t, false).Wrap(cell).Run(ctx, f.cell, iotest.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if seen != "1" || f.value(t) != "0" || f.stateLeft() {
		t.Errorf("during %q, after %q, state left %v", seen, f.value(t), f.stateLeft())
	}
}

// The value is read back before it is put back: one somebody else set
// meanwhile stays.
func TestMergesLeaveAValueChangedMeanwhile(t *testing.T) {
	f := newMergesFixture(t, "0")
	cell := runnerFunc(func(_ context.Context, p results.Pattern, _ iotest.Options) (results.Result, error) {
		f.write(t, "2")
		return results.Result{Name: p.Name()}, nil
	})
	if _, err := f.merges(t, false).Wrap(cell).Run(context.Background(), f.cell, iotest.Options{}); err != nil {
		t.Fatal(err)
	}
	if f.value(t) != "2" || f.stateLeft() || len(f.notices) != 1 || !strings.Contains(f.notices[0], "somebody changed it") {
		t.Errorf("after %q, state left %v, notices %q", f.value(t), f.stateLeft(), f.notices)
	}
}

func (f *mergesFixture) leaveState(t *testing.T, pid int) {
	t.Helper()
	data, _ := json.Marshal(mergesState{Disk: "loop7", File: f.file, Previous: 0, Set: 1, PID: pid})
	if err := os.MkdirAll(f.state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.state, "nomerges-loop7.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// After a SIGKILL the disk holds the value the killed sweep set, and its
// state file the disk's own: the next sweep puts that back first, and
// takes it, not the leftover, for the disk's own.
func TestMergesRecoverAfterAKill(t *testing.T) {
	f := newMergesFixture(t, "1")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	f.leaveState(t, gone.Process.Pid)
	var seen string
	if _, err := f.merges(t, false).Wrap(f.during(t, &seen, nil)).Run(context.Background(), f.cell, iotest.Options{}); err != nil {
		t.Fatal(err)
	}
	if seen != "1" || f.value(t) != "0" || f.stateLeft() || len(f.notices) != 1 || !strings.Contains(f.notices[0], "ended before it put back 0") {
		t.Errorf("during %q, after %q, state left %v, notices %q", seen, f.value(t), f.stateLeft(), f.notices)
	}
}

// A running iomatrix's setting is not taken for the disk's own.
func TestMergesHeldByAnotherSweep(t *testing.T) {
	f := newMergesFixture(t, "1")
	f.leaveState(t, os.Getppid())
	var seen string
	_, err := f.merges(t, false).Wrap(f.during(t, &seen, nil)).Run(context.Background(), f.cell, iotest.Options{})
	if !errors.Is(err, ErrMergesHeld) || seen != "" || f.value(t) != "1" || !f.stateLeft() {
		t.Errorf("err %v, ran %v, after %q, state left %v", err, seen != "", f.value(t), f.stateLeft())
	}
}

// Keep leaves the disk alone, and each cell that asked records the disk's
// own value.
func TestMergesKept(t *testing.T) {
	f := newMergesFixture(t, "0")
	var seen string
	res, err := f.merges(t, true).Wrap(f.during(t, &seen, nil)).Run(context.Background(), f.cell, iotest.Options{})
	if want := (results.Nomerges{Disk: "loop7", Asked: 1, Value: 0, Kept: true}); err != nil || res.Nomerges == nil || *res.Nomerges != want || seen != "0" {
		t.Errorf("err %v, recorded %+v, want %+v, during %q", err, res.Nomerges, want, seen)
	}
	if f.stateLeft() {
		t.Error("a kept setting left a state file")
	}
}

func TestPlanMerges(t *testing.T) {
	f := newMergesFixture(t, "0")
	plan := func(info results.TargetInfo, prof *profiles.Profile) (*Merges, error) {
		return PlanMerges(MergesRequest{Sys: f.sys, Plan: &target.Plan{Info: info}, Profile: prof, StateDir: f.state,
			Notice: func(s string) { f.notices = append(f.notices, s) }})
	}
	if m, err := plan(results.TargetInfo{Disk: "loop7"}, &profiles.Profile{}); m != nil || err != nil {
		t.Errorf("a profile that asks nothing: %v, %v", m, err)
	}
	if m, err := plan(results.TargetInfo{Path: "/dev/shm/x", Kind: "file"}, f.profile); m != nil || err != nil || len(f.notices) != 1 {
		t.Errorf("no block device: %v, %v, notices %q", m, err, f.notices)
	}
	// A disk without the attribute: refused, naming the way around.
	_, err := plan(results.TargetInfo{Disk: "loop8"}, f.profile)
	var m *fault.Mention
	if err == nil || !errors.As(err, &m) || !strings.Contains(m.Text(func(o string) string { return "--" + o }), "--keep-merges") {
		t.Errorf("no attribute: %v", err)
	}
	if f.value(t) != "0" || f.stateLeft() {
		t.Error("PlanMerges changed something")
	}
}
