package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A timeline's fast encoder writes what encoding/json reads back, and
// what it would have written itself.
func TestTimelineJSON(t *testing.T) {
	tl := Timeline{StepNS: 1e9, EndMS: []int64{1000, 2001}, ElapsedUS: []int64{1000000, 1001000},
		Counters: map[string][]uint64{"wios": {3, 4}, "rios": {1, 18446744073709551615}}}
	data, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	type plain Timeline // without the method: reflection's encoding
	want, _ := json.Marshal(plain(tl))
	if string(data) != string(want) {
		t.Errorf("encoded\n%s\nwant\n%s", data, want)
	}
	var back Timeline
	if err := json.Unmarshal(data, &back); err != nil || back.Counters["rios"][1] != 18446744073709551615 || back.EndMS[1] != 2001 {
		t.Errorf("read back %+v, %v", back, err)
	}
	empty, _ := json.Marshal(Timeline{})
	var e Timeline
	if err := json.Unmarshal(empty, &e); err != nil {
		t.Errorf("empty timeline %s: %v", empty, err)
	}
}

// A cached timeline encodes what an uncached one does, as it grows, and
// the document spliced from them is the document encoding/json reads.
func TestTimelineCache(t *testing.T) {
	var cache TimelineCache
	tl := Timeline{StepNS: 6e10, Counters: map[string][]uint64{"rios": nil, "wios": nil}, Cache: &cache}
	for i := range 5 {
		tl.EndMS = append(tl.EndMS, int64(i+1)*60000)
		tl.ElapsedUS = append(tl.ElapsedUS, 6e7)
		tl.Counters["rios"] = append(tl.Counters["rios"], uint64(i*7))
		tl.Counters["wios"] = append(tl.Counters["wios"], uint64(i*3))
		tl.Stable = i // the last one is still open
		plain := tl
		plain.Cache, plain.Stable = nil, 0
		got, want := tl.appendJSON(nil), plain.appendJSON(nil)
		if string(got) != string(want) {
			t.Fatalf("after %d intervals: cached\n%s\nplain\n%s", i+1, got, want)
		}
	}
	o := NewObservation(ObserveSettings{}, "2026-12-01T00:00:00Z")
	o.Devices = append(o.Devices, ObservedSeries{Name: "vda", Kind: "device", Seconds: tl, Minutes: tl})
	o.Systems = append(o.Systems, ObservedSystem{Name: "erp \u0000timeline:1", IO: &ObservedSeries{Name: "erp", Minutes: tl}})
	data, err := EncodeObservation(o)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadObservation(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if back.Devices[0].Minutes.Counters["rios"][4] != 28 || back.Systems[0].IO.Minutes.Len() != 5 || back.Systems[0].Name != o.Systems[0].Name {
		t.Errorf("read back %+v", back.Systems[0])
	}
}

// A results document with a figure no measurement gives (a negative rate
// or duration) is refused naming the result and the figure; JSON holds no
// NaN or infinity to refuse.
func TestReadDocumentRefusesNegativeFigures(t *testing.T) {
	for _, c := range []struct {
		edit func(r *Result)
		says string
	}{
		{func(r *Result) { r.Total.IOPS = -5 }, "results[0] (rand-4k-r100-qd1): total.iops is -5: a measured figure is never negative"},
		{func(r *Result) { r.Read.IOPS = -1 }, "read.iops is -1"},
		{func(r *Result) { r.Write.MiBPerS = -0.5 }, "write.mib_per_s is -0.5"},
		{func(r *Result) { r.DurationNS = -1 }, "duration_ns is -1"},
	} {
		p := Pattern{Access: Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
		r := Result{Name: p.Name(), Pattern: p}
		c.edit(&r)
		d := NewDocument(TargetInfo{}, Settings{}, "")
		d.Results = []Result{r}
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadDocument(bytes.NewReader(data)); !errors.Is(err, ErrBadDocument) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v, want a bad document saying %q", err, c.says)
		}
	}
}

// The wait a result may have lost to a busy CPU: both sums, at most what
// others ran where that is known, at most the window.
func TestCPUWaitWait(t *testing.T) {
	var none *CPUWait
	if got := none.Wait(time.Second); got != 0 {
		t.Errorf("no figure: %v", got)
	}
	c := &CPUWait{IOThreadsNS: 300e6, TargetThreadsNS: 900e6}
	if got := c.Wait(time.Second); got != time.Second {
		t.Errorf("others unknown: %v; want the window", got)
	}
	if got := c.Wait(2 * time.Second); got != 1200*time.Millisecond {
		t.Errorf("others unknown: %v; want both sums", got)
	}
	// Waiting behind its own threads while nothing else ran: no loss.
	zero := int64(0)
	c.OthersNS = &zero
	if got := c.Wait(time.Second); got != 0 {
		t.Errorf("others ran none: %v", got)
	}
	others := int64(250e6)
	c.OthersNS = &others
	if got := c.Wait(time.Second); got != 250*time.Millisecond {
		t.Errorf("others ran 250ms: %v", got)
	}
}
