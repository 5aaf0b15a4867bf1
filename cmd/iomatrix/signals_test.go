package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// SIGINT, SIGTERM and SIGHUP at random moments of sweep, cap verify and
// throttle: the exit status names the signal, the results file is valid,
// and no cgroup (hence no child or command inside one) is left.
func TestSignalsAtRandomMoments(t *testing.T) {
	c := capController(t)
	t.Parallel()
	testenv.Command(t, "dd")
	dir := t.TempDir()
	target := filepath.Join(dir, "sig.dat")
	if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "64MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	profile := filepath.Join(dir, "p.yaml")
	testenv.Must(t, os.WriteFile(profile, []byte("name: sig\nmatrix:\n  - block_sizes: [4k]\n    read_pcts: [100, 50, 0]\n    queue_depths: [1, 8]\n"), 0o644))
	seed := uint64(time.Now().UnixNano())
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	commands := map[string]func(out string) []string{
		"sweep": func(out string) []string {
			return []string{"sweep", target, "--profile", profile, "--cap", "riops=2000,wiops=2000", "--runtime", "150ms", "--ramp", "0s", "--out", out}
		},
		"cap verify": func(out string) []string {
			return []string{"cap", "verify", target, "--profile", profile, "--cap", "riops=2000,wiops=2000", "--runtime", "150ms", "--ramp", "0s", "--out", out}
		},
		"throttle": func(out string) []string {
			return []string{"throttle", "--cap", "wiops=200", "--device", dir, "--", "dd", "if=/dev/zero", "of=" + out, "bs=4k", "count=2000", "oflag=direct"}
		},
	}
	for name, argv := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(len(name))))
			start := time.Now()
			for trial := range 20 {
				out := filepath.Join(dir, fmt.Sprintf("%s-%d.json", name[:3], trial))
				sig := sigs[rng.IntN(len(sigs))]
				cmd := iomatrixCmd(t, argv(out)...)
				up := stderrStarted(t, cmd)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// The moments are those of the command's work: from its first
				// line on stderr, which it prints once its signal handling is
				// set up. Before that, the binary is still initializing its
				// packages (the test binary's take 35 to 65 ms, far more on a
				// loaded machine), and a signal then kills it like any
				// process that has not yet asked for it.
				select {
				case <-up:
				case <-time.After(30 * time.Second):
					t.Fatalf("trial %d: no output from iomatrix after 30s", trial)
				}
				// sleep: a random moment of the command's work is the test:
				// a signal must be safe at any of them.
				time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
				cmd.Process.Signal(sig)
				_ = cmd.Wait() // the exit status is read from ProcessState
				code := cmd.ProcessState.ExitCode()
				finishedFirst := code == 0
				if !finishedFirst && code != 128+int(sig) {
					t.Errorf("trial %d: exit %d after %v, want %d", trial, code, sig, 128+int(sig))
				}
				if l := leftovers(c, cmd.Process.Pid); len(l) > 0 {
					t.Errorf("trial %d (%v): cgroups left: %v", trial, sig, l)
				}
				if name != "throttle" {
					if _, err := os.Stat(out); err == nil {
						if _, err := results.ReadDocumentFile(out); err != nil {
							t.Errorf("trial %d (%v): results file: %v", trial, sig, err)
						}
					}
				}
			}
			t.Logf("20 trials in %v (seed %d)", time.Since(start).Round(time.Second), seed)
		})
	}
}

// stderrStarted drains cmd's stderr and closes the returned channel at its
// first byte.
func stderrStarted(t *testing.T, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	r, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		first := true
		for {
			n, err := r.Read(buf)
			if n > 0 && first {
				close(up)
				first = false
			}
			if err != nil {
				return
			}
		}
	}()
	return up
}

// A capped run killed outright (SIGKILL) takes its capped child with it:
// the child stops its I/O at once instead of running out its pattern in
// the cgroup, and `cap cleanup` then removes what the run left.
func TestSIGKILLTakesTheCappedChild(t *testing.T) {
	c := capController(t)
	t.Parallel()
	target := filepath.Join(t.TempDir(), "kill.dat")
	cmd := iomatrixCmd(t, "run", target, "--size", "16MiB", "--rw", "randread", "--cap", "riops=200", "--runtime", "30s", "--ramp", "0s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed while it waits for its pattern, a child reads the end of its
	// requests and ends by itself: the kill must come while it measures,
	// once its cgroup has counted reads.
	waitCappedIO(t, c, cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	testenv.WaitFor(t, 5*time.Second, "the capped child gone after its parent was killed", func() error {
		if procs := cgroupProcs(c, cmd.Process.Pid); len(procs) > 0 {
			return fmt.Errorf("%v still run", procs)
		}
		return nil
	})
	t.Logf("the child was gone %v after its parent", time.Since(killed).Round(time.Millisecond))
	if r := runIomatrix(t, iomatrixCmd(t, "cap", "cleanup")); r.code != 0 {
		t.Fatalf("cap cleanup: exit %d: %s", r.code, r.stderr)
	}
	if l := leftovers(c, cmd.Process.Pid); len(l) > 0 {
		t.Errorf("cap cleanup left %v", l)
	}
}

// The message names the signal as the exit status table does.
func TestSignalErrorNamesSignal(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGINT:  "interrupted by SIGINT",
		syscall.SIGTERM: "interrupted by SIGTERM",
		syscall.SIGHUP:  "interrupted by SIGHUP",
	} {
		if got := (signalError{sig}).Error(); got != want {
			t.Errorf("%d: %q, want %q", sig, got, want)
		}
	}
}
