package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// readOnlyDir mounts a tmpfs holding the given files and remounts it
// read-only: the mount's own EROFS, which no permission bit shows.
func readOnlyDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	testenv.Root(t)
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1M"); err != nil {
		testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
	}
	t.Cleanup(func() { testenv.Must(t, unix.Unmount(dir, unix.MNT_DETACH)) })
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	return dir
}

// Every command that writes a file refuses an unwritable one before any
// I/O, naming the flag and the file or directory at fault.
func TestOutputNotWritable(t *testing.T) {
	fixtureData, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ro := readOnlyDir(t, map[string][]byte{"old.json": fixtureData})
	old := filepath.Join(ro, "old.json")
	work := t.TempDir()
	target := filepath.Join(work, "t.dat")
	fio := filepath.Join("..", "..", "iotest", "fio", "testdata", "randread.json")
	measure := []string{"--size", "16MiB", "--runtime", "1s", "--ramp", "0s"}
	cases := []struct {
		name    string
		args    []string
		flag    string
		mention string
	}{
		{"run -o", append([]string{"run", target, "-o", filepath.Join(ro, "r.json")}, measure...), "--out", "directory " + ro},
		{"run -o existing", append([]string{"run", target, "-o", old}, measure...), "--out", old + " cannot be replaced"},
		{"sweep --out", append([]string{"sweep", target, "--profile", "quick", "--out", filepath.Join(ro, "s.json")}, measure...), "--out", "directory " + ro},
		{"sweep --resume", []string{"sweep", "--resume", old}, "--resume", old + " cannot be replaced"},
		{"cap verify --out", append([]string{"cap", "verify", target, "--cap", "riops=1000", "--out", filepath.Join(ro, "v.json")}, measure...), "--out", "directory " + ro},
		{"report -o", []string{"report", fixture, "-o", filepath.Join(ro, "r.md")}, "--out", "directory " + ro},
		{"import -o", []string{"import", fio, "-o", filepath.Join(ro, "i.json")}, "--out", "directory " + ro},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runInProcess(c.args...)
			checkRefused(t, r, c.mention)
			if !strings.HasPrefix(r.stderr, "iomatrix: "+c.flag+": ") || !strings.Contains(r.stderr, "read-only file system") {
				t.Errorf("stderr %q: want the flag %s and why", r.stderr, c.flag)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("%s was created", target)
			}
		})
	}
}
