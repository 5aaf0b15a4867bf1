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

// OtherLoad: a fifth of the disk's requests (and 500) or of its bytes (and
// 16 MiB) beyond the run's own and what is accounted for elsewhere.
func TestOtherLoad(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name              string
		d                 DevStats
		knownIOs, knownBy uint64
		want              bool
	}{
		{"quiet", DevStats{IOs: 10000, OtherIOs: 100, Bytes: 40 * mib, OtherBytes: mib}, 0, 0, false},
		{"a fifth of the requests", DevStats{IOs: 10000, OtherIOs: 2000, Bytes: 40 * mib, OtherBytes: 8 * mib}, 0, 0, true},
		{"a fifth, but under 500", DevStats{IOs: 2000, OtherIOs: 499}, 0, 0, false},
		{"writeback: few requests, most bytes", DevStats{IOs: 1953, OtherIOs: 300, Bytes: 286 * mib, OtherBytes: 280 * mib}, 0, 0, true},
		{"a fifth of the bytes, but under 16 MiB", DevStats{IOs: 2000, OtherIOs: 50, Bytes: 18 * mib, OtherBytes: 10 * mib}, 0, 0, false},
		{"all of it accounted for", DevStats{IOs: 43000, OtherIOs: 40000, Bytes: 637 * mib, OtherBytes: 625 * mib}, 40000, 625 * mib, false},
		{"more than is accounted for", DevStats{IOs: 43300, OtherIOs: 40300, Bytes: 917 * mib, OtherBytes: 905 * mib}, 40000, 625 * mib, true},
		{"more accounted for than seen", DevStats{IOs: 1000, OtherIOs: 10}, 500, 0, false},
	} {
		if got := tc.d.OtherLoad(tc.knownIOs, tc.knownBy); got != tc.want {
			t.Errorf("%s: OtherLoad(%d, %d) of %+v = %v, want %v", tc.name, tc.knownIOs, tc.knownBy, tc.d, got, tc.want)
		}
	}
}
