package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An output that could not be saved is refused, saying why; one that can
// is not, whether it exists or not.
func TestCheckSavable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "old.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string // want "": savable
	}{
		{"", ""},
		{filepath.Join(dir, "new.json"), ""},
		{file, ""},
		{link, ""},
		{filepath.Join(dir, "missing", "r.json"), "directory " + filepath.Join(dir, "missing") + " does not exist"},
		{filepath.Join(file, "r.json"), "directory " + file + " does not exist"},
		{dir, dir + " is a directory"},
		{fifo, fifo + " is not a regular file (a named pipe)"},
		{"/dev/null", "/dev/null is not a regular file (a device)"},
		// Root may write there, but no file can be made: refused either way.
		{"/sys/iomatrix.json", "cannot create files in directory /sys"},
		{"/proc/iomatrix.json", "cannot create files in directory /proc"},
	} {
		wantError(t, "CheckSavable("+c.path+")", CheckSavable(c.path), c.want)
	}
}

// A directory that files are saved in may be missing, if the nearest
// one above it that exists takes new files.
func TestCheckDirSavable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, want string
	}{
		{"", ""},
		{dir, ""},
		{filepath.Join(dir, "a", "b"), ""},
		{file, file + " is not a directory"},
		{filepath.Join(file, "a"), file + " is not a directory"},
		{"/sys/iomatrix", "cannot create files in directory /sys"},
		{"/proc/iomatrix/keep", "cannot create files in directory /proc"},
	} {
		wantError(t, "CheckDirSavable("+c.dir+")", CheckDirSavable(c.dir), c.want)
	}
}

// wantError fails the test unless err is nil where want is "", and says
// want where it is not.
func wantError(t *testing.T, call string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", call, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s = %v, want %q", call, err, want)
	}
}
