package testenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A daemon is a database server process of a test's own: in a process
// group of its own, its exit watched, stopped by a signal and killed if
// it lingers. logTail says what its logs end with, for failures.
type daemon struct {
	name    string
	logTail func() string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of the process, once exited is closed
}

// run starts cmd, its output appended to console, and waits until ping
// answers (or the daemon exits, or timeout passes: the test fails).
func (d *daemon) run(t testing.TB, cmd *exec.Cmd, console string, ping func(context.Context) error, timeout time.Duration) {
	t.Helper()
	out, err := os.OpenFile(console, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	Must(t, err)
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own process group, killed with the test binary: a server left
	// running holds the CPUs and the disk the next tests measure.
	cmd.SysProcAttr.Setpgid = true
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	d.cmd, d.exited, d.err = cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		d.err = cmd.Wait()
		close(exited)
	}(d.exited)

	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-d.exited:
			t.Fatalf("%s exited while starting (%v):\n%s", d.name, d.err, d.logTail())
		default:
		}
		if time.Now().After(deadline) {
			_ = d.stop(syscall.SIGTERM) // the failure below is the news
			t.Fatalf("%s did not answer within %v: %v\n%s", d.name, timeout, err, d.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the daemon down with sig, killing it if it has not exited
// after 30 s.
func (d *daemon) stop(sig syscall.Signal) error {
	if d.cmd == nil {
		return nil
	}
	defer func() { d.cmd = nil }()
	select {
	case <-d.exited:
		return fmt.Errorf("%s had exited already (%v):\n%s", d.name, d.err, d.logTail())
	default:
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-d.exited:
		if d.err != nil {
			return fmt.Errorf("%s's shutdown: %w\n%s", d.name, d.err, d.logTail())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL) // its group; Wait below tells
		<-d.exited
		return fmt.Errorf("%s did not shut down within 30 s and was killed:\n%s", d.name, d.logTail())
	}
}

// exec runs a statement on db, failing the test on an error.
func execSQL(t testing.TB, db *sql.DB, name, query string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, query, args...); err != nil {
		t.Fatalf("%s: %s: %v", name, query, err)
	}
}

// background runs a load generator until it ends or ctx is done; wait
// waits for it and returns its error, none when ctx stopped it. A load
// still running when the test ends is stopped.
func background(ctx context.Context, t testing.TB, cmd *exec.Cmd) (wait func() error) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill() // Wait reports what became of it
		case <-stopped:
		}
	}()
	var once sync.Once
	var err error
	finish := func() {
		once.Do(func() {
			err = <-done
			close(stopped)
		})
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // an ended process refuses the signal, which is fine
		finish()
	})
	return func() error {
		finish()
		var exit *exec.ExitError
		if err != nil && ctx.Err() != nil && errors.As(err, &exit) {
			return nil
		}
		return err
	}
}
