package results

import (
	"os"
	"path/filepath"
	"testing"
)

// A saved file is readable by all, like any other output, and no
// temporary file is left beside it.
func TestWriteFileAtomicMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	for range 2 { // creating, then replacing
		if err := WriteFileAtomic(path, &Document{SchemaVersion: SchemaVersion, Tool: Tool{Name: "iomatrix"}}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o644 {
			t.Errorf("mode %v, want 0644", mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the results file", len(entries))
	}
	if _, err := ReadDocumentFile(path); err != nil {
		t.Error(err)
	}
}

func TestShortSize(t *testing.T) {
	for n, want := range map[int64]string{512: "512b", 4096: "4k", 16384: "16k", 1 << 20: "1m", 1536: "1536b"} {
		if got := ShortSize(n); got != want {
			t.Errorf("ShortSize(%d) = %q, want %q", n, got, want)
		}
	}
}
