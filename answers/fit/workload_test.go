package fit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// The workload's sum: IOPS added, the largest block size, concurrencies
// added (unknown if one is), the tightest bound; shares never exceed the
// cell and a direction a system does not use is held to 1.
func TestWorkloadSumAndShares(t *testing.T) {
	w, err := ParseWorkload("w.yaml", []byte(`systems:
  - {name: a, reads: 100, writes: 50, block_size: 8k, concurrency: 4, latency: "p99<5ms"}
  - {name: b, reads: 300, block_size: 16k, concurrency: 2, latency: "p99<2ms"}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := w.Sum()
	if s.ReadIOPS != 400 || s.WriteIOPS != 50 || s.BlockSize != 16384 || s.Concurrency != 6 ||
		len(s.Bounds) != 1 || s.Bounds[0].Max != 2*time.Millisecond {
		t.Errorf("sum %+v", s)
	}
	shares := w.Shares(Verdict{IOPS: 900})
	total := 0.0
	for _, sh := range shares {
		total += float64(sh.ReadIOPS + sh.WriteIOPS)
	}
	if shares[0].ReadIOPS != 200 || shares[0].WriteIOPS != 100 || shares[1].ReadIOPS != 600 || shares[1].WriteIOPS != 1 || total > 901 {
		t.Errorf("shares %+v", shares)
	}
}

// A workload file that cannot be read is the workload option's bad
// input; a fault in it names the option before its file and line, as
// the reader spells the option.
func TestReadWorkload(t *testing.T) {
	dir := t.TempDir()
	var ie *fault.InputError
	_, err := ReadWorkload(filepath.Join(dir, "none.yaml"))
	if !errors.As(err, &ie) || ie.Option != "workload" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("systems:\n  - {name: a, reads: lots, block_size: 4k}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadWorkload(bad)
	var m *fault.Mention
	want := bad + `:2: "lots" is not a number`
	if !errors.As(err, &ie) || ie.Option != "" || !errors.As(err, &m) ||
		err.Error() != "workload "+want || m.Text(func(o string) string { return "--" + o }) != "--workload "+want {
		t.Errorf("a bad file: %v", err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("systems:\n  - {name: a, reads: 10, block_size: 4k}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := ReadWorkload(good); err != nil || len(w.Systems) != 1 || w.Systems[0].Name != "a" {
		t.Errorf("a good file: %+v, %v", w, err)
	}
}

// ReadNeed is the need spec parsed, its faults the need option's bad
// input, or without one the workload file's sum, with the workload.
func TestReadNeed(t *testing.T) {
	n, w, err := ReadNeed("read=100,bs=4k", "")
	if err != nil || n.ReadIOPS != 100 || n.BlockSize != 4096 || w != nil {
		t.Errorf("a need: %+v, %v, %v", n, w, err)
	}
	var ie *fault.InputError
	if _, _, err := ReadNeed("read=100", ""); !errors.As(err, &ie) || ie.Option != "need" || !strings.HasPrefix(ie.Err.Error(), "bs: missing: ") {
		t.Errorf("a need without bs: %v", err)
	}
	file := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(file, []byte("systems:\n  - {name: a, reads: 10, block_size: 4k}\n  - {name: b, writes: 5, block_size: 8k}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, w, err = ReadNeed("", file)
	if err != nil || w == nil || len(w.Systems) != 2 || n.ReadIOPS != 10 || n.WriteIOPS != 5 || n.BlockSize != 8192 {
		t.Errorf("a workload: %+v, %+v, %v", n, w, err)
	}
	if _, _, err := ReadNeed("", filepath.Join(t.TempDir(), "none.yaml")); !errors.As(err, &ie) || ie.Option != "workload" {
		t.Errorf("no workload file: %v", err)
	}
}
