package consolidation

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

// blockTrace is each database's own I/O latency, the real figure a
// rehearsal's is held to: neither MariaDB 10.11 nor PostgreSQL 15 keeps a
// percentile of its I/O's latency, and a v1 cgroup keeps none. Each
// system has a device of its own, so that the block layer's latency on
// that device is the system's: from a bio's queueing on the device
// (block_bio_queue, as the database's request enters the block layer)
// to the completion of the request that carried it (block_rq_complete),
// the kernel's path, the loop device and the volume's wait included, as
// a rehearsal's service time includes them. It is read from an ftrace
// instance of its own (blktrace's relay files cannot be opened on this
// kind of machine), filtered to the devices, with a buffer that holds a
// phase: a phase whose buffer overran is said to have lost events.
type blockTrace struct {
	dir  string
	devs map[uint64]string // kernel dev_t (major<<20 | minor) to a name
}

// traceBuffer is each CPU's buffer in KiB: a phase's 40 s of about 1,300
// requests a second, two events each, about 5 MB, with room.
const traceBuffer = 32 << 10

// startBlockTrace starts tracing the devices (name to MAJ:MIN) in a fresh
// ftrace instance, removed when the test ends.
func startBlockTrace(t *testing.T, devs map[string]string) *blockTrace {
	t.Helper()
	root := "/sys/kernel/tracing"
	if _, err := os.Stat(filepath.Join(root, "instances")); err != nil {
		root = "/sys/kernel/debug/tracing"
	}
	_, err := os.Stat(filepath.Join(root, "instances"))
	testenv.Require(t, err == nil, "no ftrace instances (tracefs) to trace the databases' devices")
	bt := &blockTrace{dir: filepath.Join(root, "instances", fmt.Sprintf("iomatrix-test-%d", os.Getpid())), devs: map[uint64]string{}}
	_ = os.Remove(bt.dir) // a previous run's, killed before its cleanup
	testenv.Must(t, os.Mkdir(bt.dir, 0o755))
	t.Cleanup(func() { _ = os.Remove(bt.dir) }) // an instance is removed by rmdir; nothing to lose
	var filter []string
	for name, mm := range devs {
		var major, minor uint64
		if _, err := fmt.Sscanf(mm, "%d:%d", &major, &minor); err != nil {
			t.Fatalf("device %s: %q is not MAJ:MIN", name, mm)
		}
		bt.devs[major<<20|minor] = name
		filter = append(filter, fmt.Sprintf("dev == %d", major<<20|minor))
	}
	bt.write(t, "buffer_size_kb", strconv.Itoa(traceBuffer))
	for _, ev := range []string{"block_bio_queue", "block_rq_complete"} {
		bt.write(t, "events/block/"+ev+"/filter", strings.Join(filter, " || "))
		bt.write(t, "events/block/"+ev+"/enable", "1")
	}
	bt.write(t, "tracing_on", "1")
	return bt
}

func (bt *blockTrace) write(t *testing.T, file, v string) {
	t.Helper()
	testenv.Must(t, os.WriteFile(filepath.Join(bt.dir, file), []byte(v), 0))
}

// blockLatency is one device's requests' latency from a trace.
type blockLatency struct {
	hist      *hist.Histogram
	unmatched int // completions of no bio queued in the trace
}

// stop stops the trace and reads each device's latencies, by name, and
// how many events the buffers lost.
func (bt *blockTrace) stop(t *testing.T) (map[string]*blockLatency, uint64) {
	t.Helper()
	bt.write(t, "tracing_on", "0")
	var lost uint64
	cpus, _ := filepath.Glob(filepath.Join(bt.dir, "per_cpu", "cpu*", "stats"))
	for _, f := range cpus {
		data, err := os.ReadFile(f)
		testenv.Must(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "overrun: "); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				lost += n
			}
		}
	}
	f, err := os.Open(filepath.Join(bt.dir, "trace"))
	testenv.Must(t, err)
	defer f.Close()
	out, err := parseBlockTrace(bufio.NewScanner(f), bt.devs)
	testenv.Must(t, err)
	return out, lost
}

// parseBlockTrace pairs each request's completion with the bios queued
// for it, and records each bio's latency, a database's I/O's: a request at sector S of N sectors carries the bios queued
// at S, and at S plus their sizes, up to S+N (the bios merged into it);
// the part beyond S+N of a bio split into several requests is the next
// request's, and each part has a latency. Flushes (no sectors) are left out, as a rehearsal's service
// time leaves out its syncs.
func parseBlockTrace(sc *bufio.Scanner, devs map[uint64]string) (map[string]*blockLatency, error) {
	type bio struct {
		at      time.Duration
		sectors uint64
	}
	queued := map[uint64]map[uint64]bio{}
	out := map[string]*blockLatency{}
	for dev, name := range devs {
		queued[dev] = map[uint64]bio{}
		out[name] = &blockLatency{hist: &hist.Histogram{}}
	}
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ev, ok := parseBlockEvent(sc.Text())
		if !ok || ev.sectors == 0 {
			continue
		}
		dev := ev.major<<20 | ev.minor
		pending, ok := queued[dev]
		if !ok {
			continue
		}
		if ev.queue {
			pending[ev.sector] = bio{ev.at, ev.sectors}
			continue
		}
		matched := false
		for s, end := ev.sector, ev.sector+ev.sectors; s < end; {
			b, ok := pending[s]
			if !ok {
				break
			}
			delete(pending, s)
			out[devs[dev]].hist.Record(int64(ev.at - b.at))
			matched = true
			if s+b.sectors > end {
				// A bio larger than the request was split (the
				// device's largest request): its rest is another
				// request's, queued when it was.
				pending[end] = bio{b.at, s + b.sectors - end}
			}
			s += b.sectors
		}
		if !matched {
			out[devs[dev]].unmatched++
		}
	}
	return out, sc.Err()
}

// blockEvent is one line of the trace:
//
//	comm-pid [cpu] flags 11486.252335: block_bio_queue: 254,0 WS 319529520 + 32 [dd]
//	comm-pid [cpu] flags 11486.252496: block_rq_complete: 254,0 WS () 319529520 + 32 be,0,4 [0]
type blockEvent struct {
	queue           bool
	at              time.Duration
	major, minor    uint64
	sector, sectors uint64
}

func parseBlockEvent(line string) (blockEvent, bool) {
	var ev blockEvent
	head, rest, ok := strings.Cut(line, ": block_")
	if !ok {
		return ev, false
	}
	kind, rest, ok := strings.Cut(rest, ": ")
	if !ok {
		return ev, false
	}
	switch kind {
	case "bio_queue":
		ev.queue = true
	case "rq_complete":
	default:
		return ev, false
	}
	f := strings.Fields(head)
	if len(f) == 0 {
		return ev, false
	}
	sec, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		return ev, false
	}
	ev.at = time.Duration(sec * 1e9)
	g := strings.Fields(rest)
	// The sector follows the flags (and, for a completion, the command
	// in brackets), then "+", then the sectors.
	plus := -1
	for i, w := range g {
		if w == "+" {
			plus = i
			break
		}
	}
	if plus < 2 || plus+1 >= len(g) {
		return ev, false
	}
	if _, err := fmt.Sscanf(g[0], "%d,%d", &ev.major, &ev.minor); err != nil {
		return ev, false
	}
	if ev.sector, err = strconv.ParseUint(g[plus-1], 10, 64); err != nil {
		return ev, false
	}
	if ev.sectors, err = strconv.ParseUint(g[plus+1], 10, 64); err != nil {
		return ev, false
	}
	return ev, true
}

// The trace's lines pair into latencies per device: a request's
// completion takes the bios merged into it, a bio split into two
// requests gives two latencies, a flush and another device's events are
// left out, and a completion of no bio seen is counted.
func TestParseBlockTrace(t *testing.T) {
	trace := `# tracer: nop
              dd-9652    [001] ..... 100.000100: block_bio_queue: 7,2 WS 1000 + 32 [dd]
              dd-9652    [001] ..... 100.000110: block_bio_queue: 7,2 WS 1032 + 32 [dd]
              dd-9652    [001] ..... 100.000120: block_bio_queue: 7,2 FWS 0 + 0 [dd]
              dd-9652    [001] ..... 100.000130: block_bio_queue: 7,3 R 64 + 8 [postgres]
              dd-9652    [001] ..... 100.000140: block_bio_queue: 7,9 R 64 + 8 [other]
          <idle>-0       [001] ..s1. 100.000600: block_rq_complete: 7,2 WS () 1000 + 64 be,0,4 [0]
          <idle>-0       [001] ..s1. 100.000700: block_rq_complete: 7,2 FWS () 0 + 0 be,0,4 [0]
          <idle>-0       [001] ..s1. 100.002130: block_rq_complete: 7,3 R () 64 + 8 be,0,4 [0]
          <idle>-0       [001] ..s1. 100.003000: block_rq_complete: 7,3 R () 4096 + 8 be,0,4 [0]
              dd-9652    [001] ..... 100.004000: block_bio_queue: 7,3 W 8192 + 512 [kworker]
          <idle>-0       [001] ..s1. 100.005000: block_rq_complete: 7,3 W () 8192 + 256 be,0,4 [0]
          <idle>-0       [001] ..s1. 100.007000: block_rq_complete: 7,3 W () 8448 + 256 be,0,4 [0]
`
	out, err := parseBlockTrace(bufio.NewScanner(strings.NewReader(trace)), map[uint64]string{7<<20 | 2: "shop", 7<<20 | 3: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	shop, ledger := out["shop"], out["ledger"]
	if shop.hist.Count() != 2 || shop.hist.Max() < 480e3 || shop.hist.Max() > 500e3 || shop.hist.Min() < 490e3-10e3 || shop.unmatched != 0 {
		t.Errorf("shop: %d latencies from %d to %d ns, %d unmatched", shop.hist.Count(), shop.hist.Min(), shop.hist.Max(), shop.unmatched)
	}
	// Its 2 ms read, and a write split in two requests, of 1 ms and 3 ms.
	if ledger.hist.Count() != 3 || ledger.hist.Max() < 2.9e6 || ledger.hist.Max() > 3.1e6 || ledger.hist.Min() < 0.9e6 || ledger.hist.Min() > 1.1e6 || ledger.unmatched != 1 {
		t.Errorf("ledger: %d latencies up to %d ns, %d unmatched", ledger.hist.Count(), ledger.hist.Max(), ledger.unmatched)
	}
}
