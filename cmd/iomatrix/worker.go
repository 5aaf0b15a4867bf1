package main

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

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/iotest"
)

// The engine runs in a child process when a cap applies, so that the cap
// throttles the workload and never iomatrix itself (layout, saving results,
// progress). The child is an `iomatrix __worker`; it is placed in the
// cgroup before it reads its first request, so before its first I/O.
// Requests and replies are JSON lines on its stdin and stdout.

// workerTarget tells the worker which target to open; the parent has
// already planned and laid it out.
type workerTarget struct {
	Path             string `json:"path"`
	Size             int64  `json:"size"`
	Writes           bool   `json:"writes"`
	AllowDestructive bool   `json:"allow_destructive"`
}

type workerRequest struct {
	Target  *workerTarget   `json:"target,omitempty"`
	Pattern *iotest.Pattern `json:"pattern,omitempty"`
	Runtime time.Duration   `json:"runtime,omitempty"`
	Ramp    time.Duration   `json:"ramp,omitempty"`
	Seed    uint64          `json:"seed,omitempty"`
	Engine  string          `json:"engine,omitempty"`
}

type workerReply struct {
	Ready    bool             `json:"ready,omitempty"`
	Progress *iotest.Progress `json:"progress,omitempty"`
	Result   *iotest.Result   `json:"result,omitempty"`
	Error    string           `json:"error,omitempty"`
	IOError  bool             `json:"io_error,omitempty"`
}

func newWorkerCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "__worker",
		Short:  "internal: run patterns for a parent iomatrix inside a cgroup",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), os.Stdin, g.stdout)
		},
	}
}

func runWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	var mu sync.Mutex
	send := func(r workerReply) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(r)
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	var t *iotest.Target
	defer func() {
		if t != nil {
			t.Close()
		}
	}()
	for {
		var req workerRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("worker: read request: %w", err)
		}
		switch {
		case req.Target != nil:
			plan, err := iotest.PlanTarget(req.Target.Path, iotest.TargetOptions{
				Size: req.Target.Size, Writes: req.Target.Writes, AllowDestructive: req.Target.AllowDestructive,
				Shared: true, // the parent holds the exclusive open
			})
			if err == nil && plan.Action != iotest.ActionReuse && plan.Action != iotest.ActionDevice && plan.Action != iotest.ActionReadOnly {
				err = fmt.Errorf("%s is not laid out (%s)", req.Target.Path, plan.Action)
			}
			if err == nil {
				t, err = plan.Open(ctx, nil)
			}
			if err != nil {
				send(workerReply{Error: err.Error()})
				return err
			}
			send(workerReply{Ready: true})
		case req.Pattern != nil:
			o := iotest.Options{Runtime: req.Runtime, Ramp: req.Ramp, Seed: req.Seed, Engine: req.Engine}
			o.Progress = func(p iotest.Progress) { send(workerReply{Progress: &p}) }
			res, err := measure(ctx, t, *req.Pattern, o)
			var ioErr *iotest.IOError
			switch {
			case ctx.Err() != nil:
				send(workerReply{Error: "interrupted"})
				return ctx.Err()
			case err != nil && res.Name == "":
				send(workerReply{Error: err.Error()})
			default:
				r := workerReply{Result: &res}
				if err != nil {
					r.Error, r.IOError = err.Error(), errors.As(err, &ioErr)
				}
				send(r)
			}
		}
	}
}

// runner runs patterns: in this process, or in a worker inside a cgroup.
type runner interface {
	Run(ctx context.Context, p iotest.Pattern, o iotest.Options) (iotest.Result, error)
	Close() error
}

type localRunner struct{ t *iotest.Target }

func (l localRunner) Run(ctx context.Context, p iotest.Pattern, o iotest.Options) (iotest.Result, error) {
	return measure(ctx, l.t, p, o)
}
func (l localRunner) Close() error { return nil }

// workerRunner drives a child `iomatrix __worker`.
type workerRunner struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	dec  *json.Decoder
	done chan struct{}
}

// startWorker starts the child; place moves it into the cgroup before it
// is sent anything. With cgroupFD >= 0 the kernel puts it there at birth
// (clone3 CLONE_INTO_CGROUP), and place is not needed.
func startWorker(stderr io.Writer, target workerTarget, cgroupFD int, place func(pid int) error) (*workerRunner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "__worker")
	cmd.Stderr = stderr
	// Its own process group: a terminal's Ctrl-C reaches the parent, which
	// stops the child itself, after which the cgroup can go.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cgroupFD >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	w := &workerRunner{cmd: cmd, in: in, dec: json.NewDecoder(bufio.NewReader(out)), done: make(chan struct{})}
	if place != nil {
		if err := place(cmd.Process.Pid); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := json.NewEncoder(in).Encode(workerRequest{Target: &target}); err != nil {
		w.Close()
		return nil, err
	}
	var r workerReply
	if err := w.dec.Decode(&r); err != nil || !r.Ready {
		w.Close()
		if err == nil {
			err = errors.New(r.Error)
		}
		return nil, fmt.Errorf("worker: open %s: %w", target.Path, err)
	}
	return w, nil
}

func (w *workerRunner) Run(ctx context.Context, p iotest.Pattern, o iotest.Options) (iotest.Result, error) {
	req := workerRequest{Pattern: &p, Runtime: o.Runtime, Ramp: o.Ramp, Seed: o.Seed, Engine: o.Engine}
	if err := json.NewEncoder(w.in).Encode(req); err != nil {
		return iotest.Result{}, fmt.Errorf("worker: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { w.cmd.Process.Signal(syscall.SIGTERM) })
	defer stop()
	for {
		var r workerReply
		if err := w.dec.Decode(&r); err != nil {
			if ctx.Err() != nil {
				return iotest.Result{}, ctx.Err()
			}
			return iotest.Result{}, fmt.Errorf("worker ended: %w", err)
		}
		switch {
		case r.Progress != nil:
			if o.Progress != nil {
				o.Progress(*r.Progress)
			}
		case r.Result != nil:
			if r.Error != "" {
				return *r.Result, errors.New(r.Error)
			}
			return *r.Result, nil
		case r.Error != "":
			if ctx.Err() != nil {
				return iotest.Result{}, ctx.Err()
			}
			return iotest.Result{}, errors.New(r.Error)
		}
	}
}

// Close ends the worker and waits for it: only then can its cgroup go.
func (w *workerRunner) Close() error {
	w.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		w.cmd.Process.Kill()
		<-exited
	}
	return nil
}
