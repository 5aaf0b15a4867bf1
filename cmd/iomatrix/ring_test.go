package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// --poll on a target whose disk has no poll queues (a loop device, a file
// on this machine's virtio disk) is refused before any I/O, exit 2, one
// line naming io_poll and how to get poll queues; nothing is laid out.
// --sqpoll runs anywhere, and its kernel thread's CPU is in the results
// and beside the cell. Bad settings of the submission thread are refused.
func TestRunRingModes(t *testing.T) {
	dev := testenv.RAMDisk(t, 64<<20)
	file := filepath.Join(t.TempDir(), "p.dat")
	for _, target := range []string{dev, file} {
		r := runInProcess("run", target, "--size", "16m", "--poll", "--runtime", "1s")
		if r.code != exitUsage || !strings.Contains(r.stderr, "io_poll") || !strings.Contains(r.stderr, "nvme.poll_queues") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("--poll on %s: exit %d, stderr %q", target, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s laid out by a refused run", file)
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--poll", "--engine", "psync"}, "--poll"},
		{[]string{"--sqpoll", "--engine", "psync"}, "--sqpoll"},
		{[]string{"--sqpoll-idle", "5ms"}, "--sqpoll-idle"},
		{[]string{"--sqpoll", "--sqpoll-idle", "1500us"}, "--sqpoll-idle"},
		{[]string{"--sqpoll", "--sqpoll-cpu", "4096"}, "--sqpoll-cpu"},
	} {
		r := runInProcess(append([]string{"run", dev, "--runtime", "1s"}, c.args...)...)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "iomatrix: "+c.flag+": ") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", c.args, r.code, r.stderr, c.flag)
		}
	}
	out := filepath.Join(t.TempDir(), "sq.json")
	r := runIomatrix(t, iomatrixCmd(t, "run", dev, "--sqpoll", "--sqpoll-idle", "20ms", "--qd", "8", "--runtime", "500ms", "--ramp", "0", "-o", out))
	if r.code != 0 {
		t.Fatalf("--sqpoll: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "sqpoll: the kernel's submission threads (1 thread) took") || !strings.Contains(r.stdout, "ring: sqpoll, sqpoll-idle=20ms") {
		t.Errorf("the cell does not show its submission thread:\n%s", r.stdout)
	}
	data, err := os.ReadFile(out)
	testenv.Must(t, err)
	var doc results.Document
	testenv.Must(t, json.Unmarshal(data, &doc))
	res := doc.Results[0]
	st := res.SubmitThread
	if doc.Settings.EngineOptions != "sqpoll,sqpoll-idle=20ms" || strings.Join(res.EngineOpts, ",") != "sqpoll,sqpoll-idle=20ms" || st == nil || st.Threads != 1 || st.Seconds <= 0 || st.CorePct <= 0 {
		t.Errorf("settings %q, cell %v, submission thread %+v", doc.Settings.EngineOptions, res.EngineOpts, st)
	}
	if res.Total.IOs == 0 || res.Completed.Reads != res.Submitted.Reads {
		t.Errorf("--sqpoll: %d I/Os, %d completed of %d submitted", res.Total.IOs, res.Completed.Reads, res.Submitted.Reads)
	}
}
