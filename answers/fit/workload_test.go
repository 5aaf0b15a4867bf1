package fit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
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
	// 450 I/Os a second of room, 112.5 to each of the four directions.
	if shares[0].ReadIOPS != 212 || shares[0].WriteIOPS != 162 || shares[1].ReadIOPS != 412 || shares[1].WriteIOPS != 112 || total > 900 {
		t.Errorf("shares %+v", shares)
	}
	// No room: each its need, scaled down.
	shares = w.Shares(Verdict{IOPS: 225})
	if shares[0].ReadIOPS != 50 || shares[0].WriteIOPS != 25 || shares[1].ReadIOPS != 150 || shares[1].WriteIOPS != 1 {
		t.Errorf("shares without room %+v", shares)
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

// A version 2 file: each system's shape read and checked; the same rates
// make the same need as in version 1, so fit's verdict is the same. A
// version 2 field in a version 1 file, an unknown version and a shape at
// odds with the rates are refused, naming the file, line and field.
func TestWorkloadVersion2(t *testing.T) {
	v1 := "systems:\n  - {name: a, reads: 100, writes: 50, block_size: 8k, concurrency: 4, latency: \"p99<5ms\"}\n"
	v2 := `version: 2
systems:
  - name: a
    reads: 100
    writes: 50
    block_size: 8k
    concurrency: 4
    latency: "p99<5ms"
    read_share: 0.6
    bssplit: 8k/90:64k/10,8k/100
    durable_writes: 12.5
    write_bursts: {size: 40, writes: 30}
    timeline: {observation: obs.json, system: a, series: io}
`
	w1, err := ParseWorkload("w1.yaml", []byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	w2, err := ParseWorkload("w2.yaml", []byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	if w1.Version != WorkloadV1 || w2.Version != WorkloadV2 || w1.Systems[0].Shape != nil {
		t.Errorf("versions %d and %d, v1 shape %+v", w1.Version, w2.Version, w1.Systems[0].Shape)
	}
	sh := w2.Systems[0].Shape
	want := Shape{ReadShare: 0.6, SizeMix: "8k/90:64k/10,8k/100", DurableWrites: 12.5, DurableKnown: true,
		Timeline: &TimelineRef{Observation: "obs.json", System: "a", Series: SeriesIO}}
	if sh == nil || sh.ReadShare != want.ReadShare || sh.SizeMix != want.SizeMix || sh.DurableWrites != want.DurableWrites ||
		!sh.DurableKnown || *sh.Timeline != *want.Timeline || sh.BurstSize != 40 || sh.BurstWrites != 30 {
		t.Errorf("shape %+v, want %+v", sh, want)
	}
	n1, n2 := w1.Systems[0], w2.Systems[0]
	n2.Shape = nil
	if !reflect.DeepEqual(n1, n2) || !reflect.DeepEqual(w1.Sum(), w2.Sum()) {
		t.Errorf("the same rates differ: %+v and %+v", n1, n2)
	}
	// Unknown durable writes, and no shape fields at all, are a shape too.
	w, err := ParseWorkload("w.yaml", []byte("version: 2\nsystems:\n  - {name: a, reads: 10, block_size: 4k, durable_writes: unknown}\n"))
	if err != nil || w.Systems[0].Shape == nil || w.Systems[0].Shape.DurableKnown || w.Systems[0].Shape.ReadShare != 1 {
		t.Errorf("unknown durable writes: %+v, %v", w.Systems, err)
	}
	for _, c := range []struct{ file, want string }{
		{"systems:\n  - {name: a, reads: 10, block_size: 4k, bssplit: 4k/100}\n",
			`w.yaml:2: system 1 (a): bssplit is a version 2 field: begin the file with "version: 2"`},
		{"version: 3\nsystems:\n  - {name: a, reads: 10, block_size: 4k}\n", "w.yaml: version 3: this iomatrix reads versions 1 and 2"},
		{"headroom_pct: 10\nsystems:\n  - {name: a, reads: 10, block_size: 4k}\n", `w.yaml: headroom_pct is a version 2 field`},
		{"version: 2\nheadroom_pct: -1\nsystems:\n  - {name: a, reads: 10, block_size: 4k}\n", `w.yaml: headroom_pct=-1: not a percentage from 0 to 1000`},
		{"version: 2\nsystems:\n  - {name: a, reads: 10, writes: 5, block_size: 4k, read_share: 1.5}\n", "read_share=1.5: not a share from 0 to 1"},
		{"version: 2\nsystems:\n  - {name: a, writes: 5, block_size: 4k, read_share: 0.5}\n", "read_share=0.5: reads is 0"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, block_size: 4k, read_share: 0.5}\n", "read_share=0.5: writes is 0"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, block_size: 4k, bssplit: 4k/50}\n", "bssplit=4k/50: "},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, block_size: 4k, bssplit: 1000/100}\n", "bssplit=1000/100: a size that is not a multiple of 512 bytes"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, durable_writes: 6}\n", "durable_writes=6: not a rate from 0 to the system's writes"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, durable_writes: lots}\n", `durable_writes: "lots" is neither a rate per second nor "unknown"`},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, durable_writes: 2, write_bursts: {size: 8, writes: 4}}\n", "write_bursts=4: writes: not a rate above 0 and at most the system's data writes"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, write_bursts: {size: 1, writes: 4}}\n", "write_bursts=1: size: not a count of writes per burst from 2 to 65536"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, write_bursts: {size: 2.5, writes: 4}}\n", "write_bursts=2.5: size: not a count"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, write_bursts: {size: 8}}\n", "write_bursts: needs size (the writes of one burst) and writes"},
		{"systems:\n  - {name: a, reads: 5, writes: 5, block_size: 4k, write_bursts: {size: 8, writes: 4}}\n", "write_bursts is a version 2 field"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, block_size: 4k, timeline: {observation: o.json, system: a}}\n", "timeline: needs observation (a file), system (its name there) and series (io or database)"},
		{"version: 2\nsystems:\n  - {name: a, reads: 5, block_size: 4k, shape: x}\n", "unknown field shape (name, reads, writes, block_size, concurrency, latency; in version 2 also read_share, bssplit, durable_writes, write_bursts, timeline)"},
	} {
		_, err := ParseWorkload("w.yaml", []byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.file, err, c.want)
		}
	}
}
