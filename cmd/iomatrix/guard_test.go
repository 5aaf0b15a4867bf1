package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// The destructive-write guard, target by target: what iomatrix does with
// and without --allow-destructive / --force, and that nothing is written
// where it refuses (the bytes are checked).
func TestDestructiveWriteGuard(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	sum := func(path string) [32]byte {
		f, err := os.Open(path)
		if err != nil {
			return [32]byte{}
		}
		defer f.Close()
		h := sha256.New()
		buf := make([]byte, 1<<20)
		for {
			n, err := f.Read(buf)
			h.Write(buf[:n])
			if err != nil {
				break
			}
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		return s
	}
	// A loop device with a filesystem, mounted.
	mounted, mountedImg := testenv.LoopDevice(t, dir, 32<<20)
	mnt := testenv.MountExt4(t, mounted)
	// A loop device whose partition holds a mounted filesystem.
	disk, part, diskImg := testenv.LoopPartition(t, t.TempDir(), 48<<20, 2048, 40960)
	partMnt := testenv.MountExt4(t, part)
	// A free loop device, and a symlink to it.
	free, freeImg := testenv.LoopDevice(t, t.TempDir(), 16<<20)
	testenv.Must(t, os.WriteFile(freeImg, bytes.Repeat([]byte{0xAB}, 16<<20), 0o644))
	link := filepath.Join(dir, "link-to-loop")
	testenv.Must(t, os.Symlink(free, link))
	// A file iomatrix did not create.
	foreign := filepath.Join(dir, "foreign.db")
	testenv.Must(t, os.WriteFile(foreign, bytes.Repeat([]byte("row;"), 1<<18), 0o644))
	// A FIFO and a directory.
	fifo := filepath.Join(dir, "fifo")
	testenv.Must(t, syscall.Mkfifo(fifo, 0o644))

	cases := []struct {
		name    string
		target  string
		args    []string
		code    int    // expected exit status
		mention string // in the one-line refusal
		guarded string // file whose bytes must not change
	}{
		{"mounted device, write", mounted, []string{"--rw", "randwrite"}, 2, "--allow-destructive", mountedImg},
		{"mounted device, write, allowed", mounted, []string{"--rw", "randwrite", "--allow-destructive"}, 2, "mounted at " + mnt, mountedImg},
		{"mounted device, read", mounted, []string{"--rw", "randread"}, 0, "", mountedImg},
		{"disk of a mounted partition, write", disk, []string{"--rw", "randwrite"}, 2, "--allow-destructive", diskImg},
		{"disk of a mounted partition, write, allowed", disk, []string{"--rw", "randwrite", "--allow-destructive"}, 2, "mounted at " + partMnt, diskImg},
		{"mounted partition, write, allowed", part, []string{"--rw", "randwrite", "--allow-destructive"}, 2, "mounted at " + partMnt, diskImg},
		{"disk of a mounted partition, read", disk, []string{"--rw", "randread"}, 0, "", diskImg},
		{"free device, write", free, []string{"--rw", "randwrite"}, 2, "--allow-destructive", freeImg},
		{"symlink to device, write", link, []string{"--rw", "randwrite"}, 2, "--allow-destructive", freeImg},
		{"symlink to device, read", link, []string{"--rw", "randread"}, 0, "", freeImg},
		{"foreign file, write", foreign, []string{"--rw", "randwrite"}, 2, "--force", foreign},
		{"foreign file, layout at a size", foreign, []string{"--rw", "randread", "--size", "2MiB"}, 2, "--force", foreign},
		{"foreign file, read in place", foreign, []string{"--rw", "randread"}, 0, "", foreign},
		{"/dev/zero", "/dev/zero", []string{"--rw", "randwrite", "--allow-destructive", "--force"}, 2, "/dev/zero", ""},
		{"directory", dir, []string{"--rw", "randread"}, 2, "directory", ""},
		{"fifo", fifo, []string{"--rw", "randwrite", "--force"}, 2, fifo, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before [32]byte
			if c.guarded != "" {
				before = sum(c.guarded)
			}
			args := append([]string{"run", c.target, "--runtime", "200ms", "--ramp", "0s", "--qd", "4"}, c.args...)
			r := runInProcess(args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			if c.code == 2 {
				checkRefused(t, r, c.mention)
			}
			if c.guarded != "" && sum(c.guarded) != before {
				t.Errorf("%s changed", c.guarded)
			}
		})
	}
	// Allowed: a free device written with --allow-destructive is written.
	before := sum(freeImg)
	if r := runInProcess("run", free, "--rw", "randwrite", "--allow-destructive", "--runtime", "200ms", "--ramp", "0s"); r.code != 0 {
		t.Fatalf("allowed write: %d %s", r.code, r.stderr)
	}
	if sum(freeImg) == before {
		t.Error("an allowed write changed nothing")
	}
	// --force lays out a foreign file (destroying it, as asked).
	if r := runInProcess("run", foreign, "--rw", "randwrite", "--force", "--size", "2MiB", "--runtime", "200ms", "--ramp", "0s"); r.code != 0 || !strings.Contains(r.stderr, "laying out") {
		t.Fatalf("forced layout: %d %s", r.code, r.stderr)
	}
}
