package observe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

// BenchmarkWeekDocument builds the document of a week observed at 1 s:
// 4 devices and 50 systems with a daily cycle and noise, on cgroup v2
// (each system's stall beside its I/O, and the host's pressure), then
// saves it as observe does (encode, no disk). It reports the file's size and one
// save's cost: `go test -run '^$' -bench WeekDocument -benchtime 1x
// ./answers/observe`.
func BenchmarkWeekDocument(b *testing.B) {
	const week = 7 * 24 * 3600
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var all []*series
	for i := range 4 {
		all = append(all, newSeries("dev"+string(rune('a'+i)), "device", "254:0", deviceLayout, DefaultWindow, start))
	}
	for i := range 50 {
		all = append(all, newSeries("sys"+string(rune('a'+i%26))+string(rune('a'+i/26)), "cgroup", "", cgroupStallLayout, DefaultWindow, start))
	}
	host := newSeries("host", results.KindPressure, "", hostStallLayout, DefaultWindow, start)
	rng := rand.New(rand.NewPCG(1, 2))
	dev := make([]uint64, len(deviceLayout.counters))
	cg := make([]uint64, len(cgroupStallLayout.counters))
	psi := make([]uint64, len(hostStallLayout.counters))
	for sec := range week {
		day := float64(sec%86400) / 86400
		for _, s := range all {
			level := 200 + 800*day + 100*rng.Float64()
			c := cg
			if s.layout.device {
				c = dev
				level *= 10
			}
			c[s.layout.rios] = uint64(level)
			c[s.layout.wios] = uint64(level / 3)
			c[s.layout.rbytes] = uint64(level) * 8192
			c[s.layout.wbytes] = uint64(level/3) * 16384
			if s.layout.device {
				c[deviceLayout.index("io_ticks_ms")] = uint64(500 + rng.IntN(400))
				c[deviceLayout.index("queue_ms")] = uint64(2000 + rng.IntN(4000))
				c[deviceLayout.index("rticks_ms")] = uint64(level / 5)
			} else {
				c[s.layout.stall] = uint64(rng.IntN(200_000))
				c[s.layout.stall+1] = c[s.layout.stall] / 3
			}
			s.add(int64(sec+1)*1000, 1e6, c)
		}
		psi[0] = uint64(100_000 + rng.IntN(400_000))
		psi[1] = psi[0] / 3
		host.add(int64(sec+1)*1000, 1e6, psi)
	}
	o := &Observer{cfg: Config{Interval: time.Second, Window: DefaultWindow}, start: start, devices: nil}
	doc := results.NewObservation(o.settings(), start.Format(time.RFC3339))
	var size int
	save := func() {
		doc.Devices, doc.Systems = doc.Devices[:0], doc.Systems[:0]
		for _, s := range all[:4] {
			doc.Devices = append(doc.Devices, *s.result(time.Second))
		}
		for _, s := range all[4:] {
			doc.Systems = append(doc.Systems, results.ObservedSystem{Name: s.name, IO: s.result(time.Second), Pressure: results.PressureCgroup})
		}
		doc.HostPressure = host.result(time.Second)
		data, err := encodeObservation(doc)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	save() // the first save encodes the week; the later ones only what came since
	b.ResetTimer()
	for range b.N {
		save()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/file")
}
