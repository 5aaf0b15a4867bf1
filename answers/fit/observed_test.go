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
		data, err := ObservedWorkload(observedFixture(), st, c.headroom, "obs.json")
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
		if erp.BlockSize != 16384 || erp.Concurrency != 4 || remote.BlockSize != 4096 || remote.Concurrency != 0 {
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
	if _, err := ObservedWorkload(idle, Statistic{Kind: "mean"}, 0, "obs.json"); err == nil {
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
