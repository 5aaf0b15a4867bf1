package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runRefused runs iomatrix in dir, in a process group of its own that is
// killed whole after refusalTimeout. It returns the process id, which the
// cgroups iomatrix makes are named after.
func runRefused(dir string, args []string) (cmdResult, int, error) {
	exe, err := os.Executable()
	if err != nil {
		return cmdResult{}, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), refusalTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = append(refusalEnviron(), "IOMATRIX_TEST_MAIN=1", "HOME="+dir, "TMPDIR="+filepath.Join(dir, "tmp"),
		"KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := cmdResult{stdout: out.String(), stderr: errb.String()}
	pid := 0
	if cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, pid, fmt.Errorf("killed after %s", refusalTimeout)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, pid, err
	}
	return r, pid, nil
}

// refusalEnviron is the test's environment without what would lead
// iomatrix elsewhere: the variables a case names as unset, the user's
// home, temporary directory and cluster.
func refusalEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "IOMATRIX_REFUSAL_"), name == "HOME", name == "TMPDIR", name == "KUBECONFIG":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// shortFlags are the short forms that name a flag as well as its long one.
var shortFlags = map[string]string{"--out": "-o", "--profile": "-p", "--namespace": "-n", "--quiet": "-q"}

// namesOne tells whether line names one of names: a flag as a word of its
// own (--bs is not named by --bssplit), anything else as a substring.
func namesOne(line string, names []string) bool {
	for _, n := range names {
		if !strings.HasPrefix(n, "-") {
			if strings.Contains(line, n) {
				return true
			}
			continue
		}
		for _, f := range []string{n, shortFlags[n]} {
			if f != "" && regexp.MustCompile(`(^|[^-\w])`+regexp.QuoteMeta(f)+`($|[^-\w])`).MatchString(line) {
				return true
			}
		}
	}
	return false
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"<>|&;$*?") {
			q[i] = fmt.Sprintf("%q", a)
		}
	}
	return strings.Join(q, " ")
}

// firstLines is s quoted, cut after n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		return fmt.Sprintf("%q … (%d lines more)", strings.Join(lines[:n], ""), len(lines)-n)
	}
	return fmt.Sprintf("%q", s)
}

// The harness's own judgements: what names a flag, whose a cgroup is.
func TestRefusalHarness(t *testing.T) {
	for _, c := range []struct {
		line  string
		names []string
		want  bool
	}{
		{"iomatrix: --bs: 134217728 bytes is outside 512B..64MiB", []string{"--bssplit"}, false},
		{"iomatrix: --bssplit: share", []string{"--bs"}, false},
		{"iomatrix: --rehearse engine: psync", []string{"--engine"}, false},
		{"iomatrix: -o x.unknown: cannot tell the format", []string{"--out"}, true},
		{"iomatrix: --out-dir: x is not a directory", []string{"--out"}, false},
		{`iomatrix: --pattern "randread::1": BS`, []string{"--pattern"}, true},
		{"iomatrix: --workload w.yaml:2: system 1", []string{"w.yaml:2"}, true},
	} {
		if got := namesOne(c.line, c.names); got != c.want {
			t.Errorf("namesOne(%q, %q) = %v", c.line, c.names, got)
		}
	}
	for _, c := range []struct {
		path    string
		foreign bool
	}{
		{"/sys/fs/cgroup/blkio/iomatrix/42-1", false},
		{"/sys/fs/cgroup/blkio/iomatrix/43-1", true},
		{"/sys/fs/cgroup/unified/x/iomatrix/42-self", false},
		{"/sys/fs/cgroup/blkio/iomatrix-observe-42", false},
		{"/sys/fs/cgroup/blkio/iomatrix-observe-7", true},
		{"/sys/fs/cgroup/blkio/iomatrix-test-ro-42", false},
		{"/sys/fs/cgroup/blkio/iomatrix-mysql-test-x9", true},
		{"/sys/fs/cgroup/blkio/iomatrix", true},
		{"/sys/fs/cgroup/blkio/mine", false},
	} {
		if got := foreignCgroup(c.path, 42, false) != ""; got != c.foreign {
			t.Errorf("foreignCgroup(%s, 42) foreign = %v", c.path, got)
		}
	}
}
