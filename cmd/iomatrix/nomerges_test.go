package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// nomergesDisk is a RAM disk whose queue's nomerges is 0 for the test,
// put back as it was after it; it returns the device and the attribute.
func nomergesDisk(t *testing.T) (dev, attr string) {
	t.Helper()
	dev = testenv.RAMDisk(t, 128<<20)
	attr = filepath.Join("/sys/block", filepath.Base(dev), "queue", "nomerges")
	setAttr(t, attr, "0")
	return dev, attr
}

func setAttr(t *testing.T, file, v string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

func attrValue(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// nomergesProfile is a profile file: a sequential 4K cell with nomerges
// 2 (the plug merges most of its reads otherwise), then a cell without.
func nomergesProfile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "nm.yaml")
	data := "name: nm\npatterns:\n" +
		"  - {access: sequential, block_size: 4k, read_pct: 100, queue_depth: 64, nomerges: 2}\n" +
		"  - {access: sequential, block_size: 4k, read_pct: 100, queue_depth: 32}\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A sweep runs a marked cell with the disk's nomerges set, records it and
// the disk's merge counters, and puts the value back; under a cap too,
// where the cell runs in the capped child. --keep-merges leaves it, and
// a resumed file keeps what it ran with.
func TestSweepNomerges(t *testing.T) {
	dev, attr := nomergesDisk(t)
	dir := t.TempDir()
	prof := nomergesProfile(t, dir)
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"uncapped", nil}, {"capped", []string{"--cap", "riops=1000000"}}, {"kept", []string{"--keep-merges"}}} {
		if tc.name == "capped" {
			capController(t)
		}
		out := filepath.Join(dir, tc.name+".json")
		args := append([]string{"sweep", dev, "--profile", prof, "--runtime", "500ms", "--ramp", "0s", "-o", out, "--format", "json"}, tc.flags...)
		r := runIomatrix(t, iomatrixCmd(t, args...))
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, r.code, r.stderr)
		}
		doc, err := results.ReadDocumentFile(out)
		if err != nil {
			t.Fatal(err)
		}
		marked, other := doc.Results[0], doc.Results[1]
		kept := tc.name == "kept"
		want := results.Nomerges{Disk: filepath.Base(dev), Asked: 2, Value: 2}
		if kept {
			want.Value, want.Kept = 0, true
		}
		if marked.Nomerges == nil || *marked.Nomerges != want || other.Nomerges != nil || doc.Settings.KeepMerges != kept {
			t.Errorf("%s: recorded %+v and %+v, keep_merges %v; want %+v", tc.name, marked.Nomerges, other.Nomerges, doc.Settings.KeepMerges, want)
		}
		if m := marked.Device.Merges; m == nil || (!kept && m.Reads != 0) {
			t.Errorf("%s: the marked cell's merges %+v", tc.name, m)
		}
		if v := attrValue(t, attr); v != "0" {
			t.Errorf("%s: nomerges %s after the sweep, was 0", tc.name, v)
		}
	}
	checkRefused(t, runInProcess("sweep", "--resume", filepath.Join(dir, "kept.json"), "--keep-merges=false"), "--keep-merges")
}

// startMarkedCell starts a sweep whose one marked cell runs long, and
// waits until the disk's nomerges reads 2: the cell is running.
func startMarkedCell(t *testing.T, dev, attr, dir string) *os.Process {
	t.Helper()
	cmd := iomatrixCmd(t, "sweep", dev, "--profile", nomergesProfile(t, dir), "--runtime", "30s", "--ramp", "0s",
		"-o", filepath.Join(dir, "long.json"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testenv.WaitFor(t, time.Minute, "nomerges at 2", func() error {
		if v := attrValue(t, attr); v != "2" {
			return &os.PathError{Op: "read", Path: attr, Err: syscall.EAGAIN}
		}
		return nil
	})
	return cmd.Process
}

// SIGINT and SIGTERM mid-cell put the disk's value back; SIGKILL leaves
// it, with the state file, and the next sweep on the disk puts it back
// first.
func TestSweepNomergesSignals(t *testing.T) {
	dev, attr := nomergesDisk(t)
	state := filepath.Join(session.DefaultMergesState, "nomerges-"+filepath.Base(dev)+".json")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		dir := t.TempDir()
		p := startMarkedCell(t, dev, attr, dir)
		if err := p.Signal(sig); err != nil {
			t.Fatal(err)
		}
		st, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		_, stateErr := os.Stat(state)
		if sig != syscall.SIGKILL {
			if v := attrValue(t, attr); v != "0" || st.ExitCode() != 128+int(sig) || stateErr == nil {
				t.Errorf("%v: exit %d, nomerges %s after, state file left %v", sig, st.ExitCode(), v, stateErr == nil)
			}
			continue
		}
		if v := attrValue(t, attr); v != "2" || stateErr != nil {
			t.Fatalf("SIGKILL: nomerges %s, state file: %v", v, stateErr)
		}
		r := runIomatrix(t, iomatrixCmd(t, "sweep", dev, "--profile", nomergesProfile(t, dir), "--runtime", "200ms", "--ramp", "0s",
			"-o", filepath.Join(dir, "after.json")))
		if r.code != 0 || !strings.Contains(r.stderr, "putting it back first") {
			t.Errorf("after SIGKILL: exit %d: %s", r.code, r.stderr)
		}
		doc, err := results.ReadDocumentFile(filepath.Join(dir, "after.json"))
		if err != nil || attrValue(t, attr) != "0" {
			t.Fatalf("after SIGKILL: %v, nomerges %s", err, attrValue(t, attr))
		}
		if n := doc.Results[0].Nomerges; n == nil || n.Value != 2 {
			t.Errorf("after SIGKILL: recorded %+v", n)
		}
		if _, err := os.Stat(state); err == nil {
			t.Error("after SIGKILL: the state file stays")
		}
	}
}

// Without root, a sweep whose profile marks cells is refused before any
// I/O (exit 4), naming --keep-merges; the target is not created.
func TestSweepNomergesNotRoot(t *testing.T) {
	testenv.Root(t)
	pub, bin := nobodyBinary(t, 0o777)
	target := filepath.Join(pub, "nobody.dat")
	cmd := iomatrixCmd(t, "sweep", target, "--size", "16MiB", "--profile", nomergesProfile(t, pub), "-o", filepath.Join(pub, "n.json"))
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	r := runIomatrix(t, cmd)
	if r.code != 4 || !strings.Contains(r.stderr, "--keep-merges") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("as nobody: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Error("a refused sweep created its target")
	}
}
