package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// The engine runs in a child process when a cap applies, so that the cap
// throttles the workload and never iomatrix itself (layout, saving results,
// progress). The child is this program run with ChildCommand, which calls
// ServeChild. It starts outside the cgroup, opens the target, reads the
// target's extent map and faults in and locks its own program's pages
// (lockProgram); only then does the parent move it into the cgroup, before
// it is sent its first pattern. So the kernel charges the cgroup with
// iomatrix's I/O and nothing else: no page fault of the child's program
// and no filesystem metadata read lands on a capped disk that also holds
// the binary (cap verify checks the kernel's counts against iomatrix's
// exactly). Requests and replies are JSON lines on its stdin and stdout.

// ChildCommand is the hidden command of this program that serves a parent
// as its capped child: the command line must run ServeChild for it.
const ChildCommand = "__child"

// childTarget tells the child which target to open; the parent has
// already planned and laid it out.
type childTarget struct {
	Path             string `json:"path"`
	Size             int64  `json:"size"`
	Writes           bool   `json:"writes"`
	AllowDestructive bool   `json:"allow_destructive"`
}

type childRequest struct {
	Target  *childTarget     `json:"target,omitempty"`
	Pattern *results.Pattern `json:"pattern,omitempty"`
	Runtime time.Duration    `json:"runtime,omitempty"`
	Auto    *iotest.Auto     `json:"auto,omitempty"`
	Ramp    time.Duration    `json:"ramp,omitempty"`
	Seed    uint64           `json:"seed,omitempty"`
	Engine  string           `json:"engine,omitempty"`
	Ring    iotest.RingMode  `json:"ring,omitzero"`
	// Profile, when set, shapes the pattern's rates over time.
	Profile *iotest.RateProfile `json:"profile,omitempty"`
	// StartAt, when set, is the moment the pattern starts: several
	// children given the same one start their windows together.
	StartAt time.Time `json:"start_at,omitzero"`
}

type childReply struct {
	Ready    *childReady      `json:"ready,omitempty"`
	Progress *iotest.Progress `json:"progress,omitempty"`
	Result   *results.Result  `json:"result,omitempty"`
	Err      *wireError       `json:"error,omitempty"`
}

// childReady says the child has opened its target and may be placed in
// the cgroup.
type childReady struct {
	// LockedBytes of the program were faulted in and locked; LockError
	// says why locking failed (the pages were faulted in, but may be
	// evicted and read again later, inside the cgroup).
	LockedBytes int64  `json:"locked_bytes"`
	LockError   string `json:"lock_error,omitempty"`
}

// ServeChild is the child's side: it reads requests from in and answers
// on out until in ends (nil) or ctx does; its target's disk and its own
// program's mappings are read in sys. Stopped by a signal (the cause of
// ctx a Signaled), it ends with ExitStatus 128 + the signal and no
// message of its own: the parent stopped it and says so itself, one
// interruption, one message.
func ServeChild(ctx context.Context, sys sysfs.FS, in io.Reader, out io.Writer) error {
	err := serveChild(ctx, sys, in, out)
	var s Signaled
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &s) {
		if sig, ok := s.Signal().(syscall.Signal); ok {
			return ExitStatus{Code: 128 + int(sig)}
		}
	}
	return err
}

func serveChild(ctx context.Context, sys sysfs.FS, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	var mu sync.Mutex
	send := func(r childReply) {
		mu.Lock()
		defer mu.Unlock()
		// A parent that is gone cannot be told; the next request read
		// fails and ends the child.
		_ = enc.Encode(r)
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	var t *target.Target
	defer func() {
		if t != nil {
			_ = t.Close() // read-only use of the descriptor: nothing to flush
		}
	}()
	for {
		var req childRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("child: read request: %w", err)
		}
		switch {
		case req.Target != nil:
			var err error
			t, err = openChildTarget(ctx, sys, req.Target)
			if err != nil {
				send(childReply{Err: toWire(err)})
				return err
			}
			ready := &childReady{}
			ready.LockedBytes, err = lockProgram(sys)
			if err != nil {
				ready.LockError = err.Error()
			}
			send(childReply{Ready: ready})
		case req.Pattern != nil:
			o := iotest.Options{Runtime: req.Runtime, Auto: req.Auto, Ramp: req.Ramp, Seed: req.Seed, Engine: req.Engine, Ring: req.Ring, Profile: req.Profile}
			o.Progress = func(p iotest.Progress) { send(childReply{Progress: &p}) }
			// An interrupted wait ends the child below, as an interrupted run does.
			_ = sleepCtx(ctx, time.Until(req.StartAt))
			res, err := iotest.Run(ctx, t, *req.Pattern, o)
			switch {
			case ctx.Err() != nil:
				send(childReply{Err: toWire(ctx.Err())})
				return ctx.Err()
			case err != nil && res.Name == "":
				send(childReply{Err: toWire(err)})
			default:
				send(childReply{Result: &res, Err: toWire(err)})
			}
		}
	}
}

// openChildTarget opens the target the parent laid out, and reads its
// extent map while the child is still outside the cgroup.
func openChildTarget(ctx context.Context, sys sysfs.FS, wt *childTarget) (*target.Target, error) {
	plan, err := target.NewPlan(wt.Path, target.Options{
		Size: wt.Size, Writes: wt.Writes, AllowDestructive: wt.AllowDestructive, Sys: sys,
		Shared: true, // the parent holds the exclusive open
	})
	if err != nil {
		return nil, err
	}
	switch plan.Action {
	case target.ActionReuse, target.ActionDevice, target.ActionReadOnly:
	default:
		return nil, fmt.Errorf("%s is not laid out (%s)", wt.Path, plan.Action)
	}
	t, err := plan.Open(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := t.LoadMetadata(); err != nil {
		_ = t.Close()
		return nil, err
	}
	return t, nil
}

// Runner runs patterns: in this process, or in a child inside a cgroup.
type Runner interface {
	Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error)
}

// local runs patterns on t in this process.
type local struct{ t *target.Target }

func (l local) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	return iotest.Run(ctx, l.t, p, o)
}

// childRunner drives a child of this program running ServeChild.
type childRunner struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	dec *json.Decoder
}

// startChild starts the child, outside any cgroup, and has it open the
// target and lock its program in memory; then place moves it into the
// cgroup, before it is sent any pattern. A child that could not lock its
// program says why on notice: its page faults may then be charged to the
// cgroup.
func startChild(stderr io.Writer, target childTarget, place func(pid int) error, notice func(string)) (*childRunner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, ChildCommand)
	cmd.Stderr = stderr
	// Its own process group: a terminal's Ctrl-C reaches the parent, which
	// stops the child itself, after which the cgroup can go. A parent
	// killed outright (SIGKILL) takes the child with it: no one would read
	// its result, and it would load the disk, capped, for the rest of its
	// pattern (a 30 s run's child outlived its parent by 30 s on a v2
	// guest), its cgroup kept from `cap cleanup` meanwhile. The signal
	// comes when the thread that started the child ends; the Go runtime
	// ends threads only under goroutines that exit locked to them, and
	// every LockOSThread here is paired with its unlock.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child: %w", err)
	}
	w := &childRunner{cmd: cmd, in: in, dec: json.NewDecoder(bufio.NewReader(out))}
	if err := json.NewEncoder(in).Encode(childRequest{Target: &target}); err != nil {
		_ = w.Close() // the child never measured: its end says nothing more
		return nil, fmt.Errorf("child: %w", err)
	}
	var r childReply
	if err := w.dec.Decode(&r); err != nil || r.Ready == nil {
		_ = w.Close() // the child never measured: its end says nothing more
		if err == nil {
			err = r.Err.err()
		}
		return nil, fmt.Errorf("child: open %s: %w", target.Path, err)
	}
	if r.Ready.LockError != "" {
		notice(fmt.Sprintf("the capped child could not lock its program in memory (%s): its page faults may be charged to the cgroup", r.Ready.LockError))
	}
	if err := place(cmd.Process.Pid); err != nil {
		_ = w.Close() // the child never measured: its end says nothing more
		return nil, err
	}
	return w, nil
}

func (w *childRunner) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	return w.runAt(ctx, time.Time{}, p, o)
}

// runAt runs p starting at the moment at (zero: at once).
func (w *childRunner) runAt(ctx context.Context, at time.Time, p results.Pattern, o iotest.Options) (results.Result, error) {
	if o.LatLog.Completion != nil || o.LatLog.Response != nil {
		// Its writers are this process's: the child could not reach them.
		return results.Result{}, pattern.Mention("lat_log", func(n fault.Namer) string {
			return "a latency log is written by an uncapped run: not with " + n("cap") + " or " + n("cgroup")
		})
	}
	req := childRequest{Pattern: &p, Runtime: o.Runtime, Auto: o.Auto, Ramp: o.Ramp, Seed: o.Seed, Engine: o.Engine, Ring: o.Ring, Profile: o.Profile, StartAt: at}
	if err := json.NewEncoder(w.in).Encode(req); err != nil {
		return results.Result{}, fmt.Errorf("child: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { w.cmd.Process.Signal(syscall.SIGTERM) })
	defer stop()
	for {
		var r childReply
		if err := w.dec.Decode(&r); err != nil {
			if ctx.Err() != nil {
				return results.Result{}, ctx.Err()
			}
			return results.Result{}, fmt.Errorf("child ended: %w", err)
		}
		switch {
		case r.Progress != nil:
			if o.Progress != nil {
				o.Progress(*r.Progress)
			}
		case r.Result != nil:
			return *r.Result, r.Err.err()
		case r.Err != nil:
			if ctx.Err() != nil {
				return results.Result{}, ctx.Err()
			}
			return results.Result{}, r.Err.err()
		}
	}
}

// Close ends the child and waits for it: only then can its cgroup go. It
// returns how the child ended (a child stopped by a signal says so).
func (w *childRunner) Close() error {
	w.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(5 * time.Second):
		w.cmd.Process.Kill()
		err = <-exited
	}
	return err
}
