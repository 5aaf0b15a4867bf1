package report

import (
	"encoding/csv"
	"html"
	"maps"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// hostPressurePerSecond is the host's stall: 30 % of each second some,
// 10 % full, and 80 % and 40 % in the busiest hour.
func hostPressurePerSecond(busy bool) map[string]uint64 {
	if busy {
		return map[string]uint64{results.CounterStallSome: 800_000, results.CounterStallFull: 400_000}
	}
	return map[string]uint64{results.CounterStallSome: 300_000, results.CounterStallFull: 100_000}
}

// observationWithStall is observation() as observe now writes it: the
// host's pressure, erp's own stall from its cgroup's io.pressure, web
// and batch told by the host's, vda's flushes among its figures.
func observationWithStall() *results.Observation {
	o := observation()
	o.Accounting.Notes = append(o.Accounting.Notes,
		"Stall shares (stall_some_pct, stall_full_pct) are the kernel's pressure stall information (PSI).",
		"No io.pressure for web, batch (PSI disabled for the cgroup): the stall there is told only by the host's.")
	host := series("host", "", results.KindPressure, nil, hostPressurePerSecond)
	host.Summary = &results.SeriesSummary{ObservedNS: 7200e9, Intervals: obsWindowS, Minutes: obsMinutes,
		Mean:      map[string]float64{results.FigureStallSome: 55, results.FigureStallFull: 25},
		PerMinute: map[string]results.Spread3{results.FigureStallSome: spread(30, 80, 80, 80), results.FigureStallFull: spread(10, 40, 40, 40)},
		PerSecond: map[string]results.Spread3{results.FigureStallSome: spread(30, 80, 80, 80), results.FigureStallFull: spread(10, 40, 40, 40)},
		BusiestHour: &results.BusiestHour{Start: "2024-05-01T08:30:00Z", End: "2024-05-01T09:30:00Z", StartMS: busyFromMin * 60000, EndMS: busyToMin * 60000,
			Mean: map[string]float64{results.FigureStallSome: 80, results.FigureStallFull: 40}},
	}
	o.HostPressure = &host

	erp := &o.Systems[0]
	io := series("erp", "", "cgroup", nil, func(busy bool) map[string]uint64 {
		m := share(7, 10)(busy)
		m[results.CounterStallSome], m[results.CounterStallFull] = 120_000, 20_000
		return m
	})
	io.Summary = erp.IO.Summary
	io.Summary.Mean = maps.Clone(io.Summary.Mean)
	io.Summary.Mean[results.FigureStallSome], io.Summary.Mean[results.FigureStallFull] = 12, 2
	io.Summary.PerMinute = maps.Clone(io.Summary.PerMinute)
	io.Summary.PerMinute[results.FigureStallSome] = spread(12, 12, 12, 12)
	erp.IO, erp.Pressure = &io, results.PressureCgroup
	o.Systems[1].Pressure, o.Systems[2].Pressure = results.PressureHost, results.PressureHost

	vda := o.Devices[0].Summary
	vda.Mean["flushes"] = 5
	vda.PerMinute["flushes"] = spread(5, 5, 5, 5)
	vda.PerSecond["flushes"] = spread(5, 5, 5, 6)
	return o
}

// The host's pressure is a part of its own, the systems say whose
// stall they have, and a device's flushes have their spread; the CSV
// has the stall shares, the host's rows without I/O columns.
func TestObservationStall(t *testing.T) {
	o := observationWithStall()
	text := renderObservation(t, o, "text")
	golden(t, "observation-stall.txt", []byte(text))
	if got := tableRow(t, text, "stall some %"); got[0] != "55.0" || got[1] != "80.0" || got[2] != "30.0" {
		t.Errorf("the host's stall some row %q, want mean 55.0, busiest hour 80.0, minute p50 30.0", got)
	}
	if got := tableRow(t, text, "f/s"); got[0] != "5.00" || got[9] != "6.00" {
		t.Errorf("vda's flushes row %q", got)
	}
	for _, format := range []string{"text", "markdown", "html"} {
		containsAll(t, format, html.UnescapeString(renderObservation(t, o, format)),
			"host pressure (/proc/pressure/io)",
			"the hour with the most stall: 2024-05-01 08:30:00–09:30:00 UTC",
			"stall: its cgroup's io.pressure, the share of time (in percent, not per second) in which some (all) of its tasks waited on I/O",
			"stall: its cgroup keeps no io.pressure; the host's pressure stands for it (host pressure, above)",
			"vda: flushes",
			"No io.pressure for web, batch")
	}
	containsAll(t, "html", renderObservation(t, o, "html"), "stall on I/O, % of each minute")

	rows, err := csv.NewReader(strings.NewReader(renderObservation(t, o, "csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var host, erp, vda int
	for _, r := range rows[1:] {
		switch {
		case r[0] == "host" && r[2] == "minute":
			host++
			if r[1] != results.KindPressure || r[col["reads_per_s"]] != "" || r[col["flushes_per_s"]] != "" ||
				(r[col["stall_some_pct"]] != "30" && r[col["stall_some_pct"]] != "80") {
				t.Errorf("the host's minute %q", r)
			}
		case r[0] == "erp" && r[1] == "cgroup" && r[2] == "interval":
			erp++
			if r[col["stall_some_pct"]] != "12" || r[col["stall_full_pct"]] != "2" || r[col["reads_per_s"]] == "" {
				t.Errorf("erp's interval %q", r)
			}
		case r[0] == "vda" && r[2] == "minute":
			vda++
			if r[col["flushes_per_s"]] != "5" || r[col["stall_some_pct"]] != "" {
				t.Errorf("vda's minute %q", r)
			}
		case r[0] == "web" && r[col["stall_some_pct"]] != "":
			t.Errorf("web, without stall counters, has a stall share: %q", r)
		}
	}
	if host != obsMinutes || erp != obsWindowS || vda != obsMinutes {
		t.Errorf("%d host minutes, %d erp intervals, %d vda minutes", host, erp, vda)
	}
}

// A document older than the stall figures says nothing of them: no
// part, no note, no stall row.
func TestObservationWithoutStall(t *testing.T) {
	for _, format := range []string{"text", "markdown", "html"} {
		if out := renderObservation(t, observation(), format); strings.Contains(out, "stall") || strings.Contains(out, "pressure") {
			i := max(strings.Index(out, "stall"), strings.Index(out, "pressure"))
			t.Errorf("%s: an old document speaks of stall: %q", format, out[max(0, i-200):min(len(out), i+200)])
		}
	}
}
