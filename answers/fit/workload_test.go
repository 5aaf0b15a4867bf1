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

// Each field of a workload is parsed as its own type, never spliced
// into a need to be parsed again: a value that would inject another
// field, a number that is not one, a name that would write a line of its
// own, a system given twice and a second YAML document are refused with
// the file, line and field.
func TestParseWorkloadRefuses(t *testing.T) {
	for _, c := range []struct{ name, yaml, says string }{
		{"injected concurrency", `{name: a, reads: 100, block_size: "4k,qd=3"}`, `w.yaml:2: system 1 (a): block_size=4k,qd=3: not a block size`},
		{"injected rate", `{name: a, reads: 100, block_size: 4k, latency: "p99<2ms,read=100000"}`, `w.yaml:2: system 1 (a): latency=read=100000: not a latency bound`},
		{"bound twice", `{name: a, reads: 100, block_size: 4k, latency: "p99<2ms,p99<5ms"}`, `w.yaml:2: system 1 (a): latency: p99<5ms: a bound of p99 given twice`},
		{"bad bound", `{name: a, reads: 100, block_size: 4k, latency: "p99<-2ms"}`, `w.yaml:2: system 1 (a): latency: p99<-2ms: not a duration`},
		{"NaN reads", `{name: a, reads: .nan, block_size: 4k}`, `w.yaml:2: system 1 (a): reads=NaN: not a number of IOPS`},
		{"infinite writes", `{name: a, reads: 1, writes: .inf, block_size: 4k}`, `w.yaml:2: system 1 (a): writes=+Inf: not a number of IOPS`},
		{"negative reads", `{name: a, reads: -5, writes: 100, block_size: 4k}`, `w.yaml:2: system 1 (a): reads=-5: not a number of IOPS`},
		{"negative concurrency", `{name: a, reads: 100, block_size: 4k, concurrency: -3}`, `w.yaml:2: system 1 (a): concurrency=-3: not a concurrency`},
		{"text concurrency", `{name: a, reads: 100, block_size: 4k, concurrency: "3,qd=5"}`, `w.yaml:2: "3,qd=5" is not a number`},
		{"no IOPS", `{name: a, block_size: 4k}`, `w.yaml:2: system 1 (a): reads: give the read and/or write IOPS, above 0`},
		{"no block size", `{name: a, reads: 1}`, `w.yaml:2: system 1 (a): block_size: missing`},
		{"newline in a name", `{name: "a\nFITS", reads: 100, block_size: 4k}`, `w.yaml:2: system 1: name: "a\nFITS" holds a character that is not printable`},
		{"tab in a name", `{name: "a\tb", reads: 100, block_size: 4k}`, `w.yaml:2: system 1: name: "a\tb" holds a character that is not printable`},
		{"escape in a name", `{name: "a\e[2J", reads: 100, block_size: 4k}`, `w.yaml:2: system 1: name: "a\x1b[2J" holds a character`},
		{"no name", `{reads: 100, block_size: 4k}`, `w.yaml:2: system 1: name: missing`},
		{"unknown field", `{name: a, reads: 100, block_size: 4k, iops: 5}`, `w.yaml:2: unknown field iops`},
		{"system twice", "{name: a, reads: 100, block_size: 4k}\n  - {name: a, reads: 100, block_size: 4k}", `w.yaml:3: system 2: name: "a" given twice`},
		{"second document", "{name: a, reads: 100, block_size: 4k}\n---\nsystems:\n  - {name: b, reads: 1e9, block_size: 4k}", `w.yaml:3: a second YAML document`},
		{"trailing document", "{name: a, reads: 100, block_size: 4k}\n---", `w.yaml:3: a second YAML document`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseWorkload("w.yaml", []byte("systems:\n  - "+c.yaml+"\n"))
			if err == nil || !strings.HasPrefix(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v, want one line starting %q", err, c.says)
			}
		})
	}
	// Several bounds are a latency of their own, each parsed as a bound.
	w, err := ParseWorkload("w.yaml", []byte("systems:\n  - {name: a b, reads: 100, block_size: 4k, concurrency: 2, latency: \"p99<2ms, p50<1ms\"}\n"))
	if err != nil || len(w.Systems) != 1 || len(w.Systems[0].Bounds) != 2 || w.Systems[0].Concurrency != 2 || w.Systems[0].Name != "a b" {
		t.Errorf("two bounds: %+v, %v", w, err)
	}
}

// A need refuses every value that is not its field's type, NaN, infinite
// and negative numbers, and a field or a bound given twice.
func TestParseNeedRefuses(t *testing.T) {
	for _, c := range []struct{ need, says string }{
		{"read=NaN,bs=4k", "read=NaN: not a number of IOPS"},
		{"read=Inf,bs=4k", "read=Inf: not a number of IOPS"},
		{"read=1e400,bs=4k", "read=1e400: not a number of IOPS"},
		{"read=100,write=-5,bs=4k", "write=-5: not a number of IOPS"},
		{"read=100,bs=-4k", "bs=-4k: not a block size"},
		{"read=100,bs=NaN", "bs=NaN: not a block size"},
		{"read=100,bs=4k,qd=-1", "qd=-1: not a concurrency"},
		{"read=100,bs=4k,qd=NaN", "qd=NaN: not a concurrency"},
		{"read=100,bs=4k,read=5", "read=5: given twice"},
		{"read=100,bs=4k,p99<1ms,p99<2ms", "p99<2ms: a bound of p99 given twice"},
		{"read=100,bs=4k,p99<NaNms", "p99<NaNms: not a duration"},
		{"read=100,bs=4k,p99<-1ms", "p99<-1ms: not a duration"},
		{"bs=4k", "read: give the read and/or write IOPS, above 0"},
		{"read=100", "bs: missing"},
	} {
		_, err := ParseNeed(c.need)
		var ne *NeedError
		if !errors.As(err, &ne) || !strings.HasPrefix(err.Error(), c.says) {
			t.Errorf("%s: %v, want a NeedError saying %q", c.need, err, c.says)
		}
	}
}
