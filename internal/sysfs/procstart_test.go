package sysfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStatStart(t *testing.T) {
	// The command may hold spaces and parentheses.
	stat := "77 (postgres: x (y)) S 12 77 77 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 12345 0 0\n"
	ppid, start, err := ParseStatStart([]byte(stat))
	if err != nil || ppid != 12 || start != 123450*time.Millisecond {
		t.Errorf("ParseStatStart: %d, %v, %v; want 12 and 12345 ticks", ppid, start, err)
	}
	for _, bad := range []string{"77 (x) S 1 2 3", "77 (x) S z 77 77 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 1 0 0",
		"77 (x) S 1 77 77 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 -5 0 0"} {
		if _, _, err := ParseStatStart([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseUptime(t *testing.T) {
	if d, err := ParseUptime([]byte("350735.47 234388.90\n")); err != nil || d != 350735470*time.Millisecond {
		t.Errorf("ParseUptime: %v, %v", d, err)
	}
	for _, bad := range []string{"", "\n", "abc 1", "-3 1"} {
		if _, err := ParseUptime([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A process's age is the machine's uptime less its start, both from
// procfs; this process's is short, and its parent runs.
func TestProcessStart(t *testing.T) {
	proc := t.TempDir()
	dir := filepath.Join(proc, "42")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "42 (x) S 7 42 42 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 1500 0 0\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "uptime"), []byte("20.00 30.00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := NewFS(t.TempDir(), proc).ProcessStart(42)
	if err != nil || st != (ProcStart{PPID: 7, Age: 5 * time.Second}) {
		t.Errorf("ProcessStart: %+v, %v; want parent 7, up 5 s", st, err)
	}
	self, err := Default().ProcessStart(os.Getpid())
	if err != nil || self.PPID != os.Getppid() || self.Age < 0 || self.Age > time.Hour {
		t.Errorf("this process: %+v, %v", self, err)
	}
}
