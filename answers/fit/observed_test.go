package fit

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func observedFixture() *results.Observation {
	o := results.NewObservation(results.ObserveSettings{}, "2026-12-01T00:00:00Z")
	o.FinishedAt = "2026-12-02T00:00:00Z"
	o.Host.Hostname = "db1"
	spread := func(p50, p95, p99, max float64) results.Spread3 {
		return results.Spread3{P50: p50, P95: p95, P99: p99, Max: max}
	}
	sum := func(reads, writes float64, mix []results.SizeClass) *results.SeriesSummary {
		return &results.SeriesSummary{
			Mean:      map[string]float64{"reads": reads / 2, "writes": writes / 2},
			PerMinute: map[string]results.Spread3{"reads": spread(reads/2, reads, reads*1.1, reads*1.2), "writes": spread(writes/2, writes, writes*1.1, writes*1.2)},
			PerSecond: map[string]results.Spread3{"reads": spread(reads/2, reads*2, reads*3, reads*4), "writes": spread(writes/2, writes*2, writes*3, writes*4)},
			BusiestHour: &results.BusiestHour{Start: "2026-12-01T01:10:00Z", End: "2026-12-01T02:10:00Z",
				Mean: map[string]float64{"reads": reads * 0.9, "writes": writes * 0.9}, ReadShare: reads / (reads + writes), SizeMix: mix},
		}
	}
	o.Systems = []results.ObservedSystem{
		{Name: "erp", Cgroup: "/system.slice/mariadb.service", Concurrency: 3.2,
			IO: &results.ObservedSeries{Summary: sum(1000, 300, []results.SizeClass{{Bytes: 8192, Reads: 10}, {Bytes: 16384, Reads: 900, Writes: 300}})}},
		{Name: "remote", Database: &results.ObservedSeries{Summary: sum(200, 100, nil)}},
		{Name: "idle", Cgroup: "/system.slice/idle.service", IO: &results.ObservedSeries{Summary: sum(0, 0, nil)}},
	}
	return o
}

// The workload file an observation gives is one fit reads, at the
// statistic asked, with the headroom applied and said.
func TestObservedWorkload(t *testing.T) {
	for _, c := range []struct {
		stat        string
		headroom    float64
		erp, remote [2]float64
	}{
		{"p95", 0, [2]float64{1000, 300}, [2]float64{200, 100}},
		{"p95", 30, [2]float64{1300, 390}, [2]float64{260, 130}},
		{"p99-second", 0, [2]float64{3000, 900}, [2]float64{600, 300}},
		{"mean", 0, [2]float64{500, 150}, [2]float64{100, 50}},
		{"busiest-hour", 0, [2]float64{900, 270}, [2]float64{180, 90}},
		{"max", 0, [2]float64{1200, 360}, [2]float64{240, 120}},
	} {
		st, err := ParseStatistic(c.stat)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ObservedWorkload(observedFixture(), st, c.headroom, "obs.json", "systems.yaml")
		if err != nil {
			t.Fatal(err)
		}
		w, err := ParseWorkload("systems.yaml", data)
		if err != nil {
			t.Fatalf("%s: fit cannot read it: %v\n%s", c.stat, err, data)
		}
		if len(w.Systems) != 2 {
			t.Fatalf("%s: %d systems, want erp and remote (idle left out)\n%s", c.stat, len(w.Systems), data)
		}
		erp, remote := w.Systems[0], w.Systems[1]
		if erp.ReadIOPS != c.erp[0] || erp.WriteIOPS != c.erp[1] || remote.ReadIOPS != c.remote[0] || remote.WriteIOPS != c.remote[1] {
			t.Errorf("%s +%v%%: erp %v/%v remote %v/%v, want %v %v", c.stat, c.headroom, erp.ReadIOPS, erp.WriteIOPS, remote.ReadIOPS, remote.WriteIOPS, c.erp, c.remote)
		}
		// The observed queue is a comment, not a bound (see ObservedWorkload).
		if erp.BlockSize != 16384 || erp.Concurrency != 0 || remote.BlockSize != 4096 || remote.Concurrency != 0 ||
			!strings.Contains(string(data), "    # in flight, observed: 3.2 on average (aqu-sz share)\n") {
			t.Errorf("%s: erp bs %d qd %d, remote bs %d qd %d", c.stat, erp.BlockSize, erp.Concurrency, remote.BlockSize, remote.Concurrency)
		}
		text := string(data)
		for _, want := range []string{"--statistic " + c.stat, "idle: no I/O", "remote: database"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the file does not say %q:\n%s", c.stat, want, text)
			}
		}
		if c.headroom > 0 && !strings.Contains(text, "headroom: 30% added") {
			t.Errorf("headroom not recorded:\n%s", text)
		}
	}
	idle := observedFixture()
	idle.Systems = idle.Systems[2:]
	if _, err := ObservedWorkload(idle, Statistic{Kind: "mean"}, 0, "obs.json", "systems.yaml"); err == nil {
		t.Error("a workload of systems without I/O written")
	}
}

func TestParseStatistic(t *testing.T) {
	for _, s := range []string{"mean", "busiest-hour", "p50", "p95", "p99", "max", "p95-second", "max-second"} {
		if _, err := ParseStatistic(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"", "p42", "mean-second", "busiest-hour-second", "P95"} {
		if _, err := ParseStatistic(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// The version 2 file carries each system's shape: its busiest hour's
// read share and size mix, its database's durable writes at the
// statistic (unknown without a database), and where its timeline is,
// relative to the workload file's directory.
func TestObservedWorkloadShape(t *testing.T) {
	o := observedFixture()
	o.Systems[1].Database.Kind = "postgres"
	o.Systems[1].Database.Summary.Mean["durable_writes"] = 20
	o.Systems[1].Database.Summary.PerMinute["durable_writes"] = results.Spread3{P50: 20, P95: 40, P99: 50, Max: 60}
	o.Systems[1].Sessions = 8
	st, err := ParseStatistic("p95")
	if err != nil {
		t.Fatal(err)
	}
	data, err := ObservedWorkload(o, st, 30, "runs/obs.json", "runs/w/systems.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorkload("runs/w/systems.yaml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if w.Version != WorkloadV2 || w.HeadroomPct != 30 || len(w.Systems) != 2 {
		t.Fatalf("version %d, %d systems\n%s", w.Version, len(w.Systems), data)
	}
	erp, remote := w.Systems[0].Shape, w.Systems[1].Shape
	if erp == nil || remote == nil {
		t.Fatalf("no shape\n%s", data)
	}
	// erp's busiest hour: reads 10 at 8k and 900 at 16k, writes 300 at 16k.
	if erp.ReadShare != 0.769 || erp.SizeMix != "8k/1:16k/99,16k/100" || erp.DurableKnown {
		t.Errorf("erp's shape %+v\n%s", *erp, data)
	}
	if erp.Timeline == nil || *erp.Timeline != (TimelineRef{Observation: "../obs.json", System: "erp", Series: SeriesIO}) ||
		erp.Timeline.Resolve("runs/w/systems.yaml") != "runs/obs.json" {
		t.Errorf("erp's timeline %+v", erp.Timeline)
	}
	// remote: its database's p95 of 40 durable writes a minute, +30 %,
	// and among its writes, which its database's counters leave out: 100
	// a second and 52 flushes.
	if !remote.DurableKnown || remote.DurableWrites != 52 || remote.Timeline.Series != SeriesDatabase || remote.SizeMix != "" {
		t.Errorf("remote's shape %+v\n%s", *remote, data)
	}
	if r := w.Systems[1]; r.WriteIOPS != 130+52 || r.ReadIOPS != 260 {
		t.Errorf("remote: %v reads and %v writes a second\n%s", r.ReadIOPS, r.WriteIOPS, data)
	}
	// Its bound: its 8 sessions, its log and its background writer; erp,
	// with no database, has none.
	if w.Systems[1].Concurrency != 10 || w.Systems[0].Concurrency != 0 ||
		!strings.Contains(string(data), "concurrency: 10 # from its database: 8 sessions, each waiting on its own read, 1 for its log's flushes, 1 for its background writer") {
		t.Errorf("concurrency: erp %d, remote %d\n%s", w.Systems[0].Concurrency, w.Systems[1].Concurrency, data)
	}
	ser, err := remote.Timeline.Find(o)
	if err != nil || ser != o.Systems[1].Database {
		t.Errorf("remote's timeline found %v, %v", ser, err)
	}
	if _, err := (TimelineRef{System: "nobody", Series: SeriesIO}).Find(o); err == nil {
		t.Error("a system the observation lacks found")
	}
	// A MySQL series of an observation that predates durable_writes: its
	// fsyncs.
	o = observedFixture()
	o.Systems[1].Database.Kind = "mysql"
	o.Systems[1].Database.Summary.Mean["fsyncs"] = 5
	o.Systems[1].Database.Summary.PerMinute["fsyncs"] = results.Spread3{P95: 9}
	data, err = ObservedWorkload(o, st, 0, "/abs/obs.json", "systems.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w, err = ParseWorkload("systems.yaml", data); err != nil || !w.Systems[1].Shape.DurableKnown || w.Systems[1].Shape.DurableWrites != 9 ||
		w.Systems[1].Shape.Timeline.Observation != "/abs/obs.json" {
		t.Errorf("mysql's fsyncs: %+v, %v\n%s", w.Systems[1].Shape, err, data)
	}
	// Its page cleaner's batches: 50 data writes a second on average
	// over 0.5 doublewrite batches, 100 writes a batch; at the p95, 100
	// of its 109 writes a second are data writes, all of them in bursts.
	// None where it had no doublewrite batch, nor for PostgreSQL.
	o.Systems[1].Database.Summary.Mean["dblwr_writes"] = 0.5
	if data, err = ObservedWorkload(o, st, 0, "/abs/obs.json", "systems.yaml"); err != nil {
		t.Fatal(err)
	}
	if w, err = ParseWorkload("systems.yaml", data); err != nil || w.Systems[1].Shape.BurstSize != 100 || w.Systems[1].Shape.BurstWrites != 100 ||
		!strings.Contains(string(data), "write_bursts: {size: 100, writes: 100} # its page cleaner's batches") {
		t.Errorf("mysql's write bursts: %+v, %v\n%s", w.Systems[1].Shape, err, data)
	}
	for _, kind := range []string{"mysql", "postgres"} {
		o.Systems[1].Database.Kind = kind
		o.Systems[1].Database.Summary.Mean["dblwr_writes"] = map[string]float64{"mysql": 0, "postgres": 0.5}[kind]
		if data, err = ObservedWorkload(o, st, 0, "/abs/obs.json", "systems.yaml"); err != nil || strings.Contains(string(data), "write_bursts: {") {
			t.Errorf("%s without bursts: %v\n%s", kind, err, data)
		}
	}
}

// The observed size mix in whole percent per direction, summing to 100.
func TestSizeMixSplit(t *testing.T) {
	for _, c := range []struct {
		mix  []results.SizeClass
		want string
	}{
		{nil, ""},
		{[]results.SizeClass{{Bytes: 4096, Reads: 1}}, "4k/100,4k/100"},
		{[]results.SizeClass{{Bytes: 4096, Writes: 3}, {Bytes: 16384, Writes: 1}}, "4k/75:16k/25,4k/75:16k/25"},
		{[]results.SizeClass{{Bytes: 4096, Reads: 1, Writes: 2}, {Bytes: 8192, Reads: 1}, {Bytes: 65536, Reads: 1, Writes: 1}}, "4k/33:8k/33:64k/34,4k/67:64k/33"},
		{[]results.SizeClass{{Bytes: 4096, Reads: 1000}, {Bytes: 1 << 20, Reads: 4}}, "4k/100,4k/100"},
		{[]results.SizeClass{{Bytes: 256, Reads: 1}}, "512b/100,512b/100"},
	} {
		got := sizeMixSplit(c.mix)
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.mix, got, c.want)
		}
	}
}

// A system's bound from its database: a session per client where it
// reads (5 % of its I/Os or more), one for its log's flushes, one for a
// background writer where its data writes outnumber the flushes.
func TestIssuers(t *testing.T) {
	for _, c := range []struct {
		sessions               int
		reads, writes, durable float64
		known                  bool
		want                   int
	}{
		{8, 726, 333, 64, true, 10}, // MariaDB under sysbench: reads, a log, a page cleaner
		{4, 1, 247, 100, true, 2},   // PostgreSQL whose buffers hold its data: a WAL, a checkpointer
		{4, 0, 100, 60, true, 1},    // every other write a flush: the log alone
		{4, 100, 0, 0, true, 4},     // reads only
		{4, 100, 50, 0, false, 5},   // durable writes not known: a writer
		{0, 726, 333, 64, true, 0},  // sessions not known: no bound
	} {
		if got, why := issuers(c.sessions, c.reads, c.writes, c.durable, c.known); got != c.want || (got > 0) != (why != "") {
			t.Errorf("%+v: %d (%s), want %d", c, got, why, c.want)
		}
	}
}
