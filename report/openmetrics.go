package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/results"
)

// writeOpenMetrics renders a results or fleet document as OpenMetrics
// text, which Prometheus's text parser also reads: for node_exporter's
// textfile collector or a Pushgateway. Every family is a gauge but the
// latency, which is a summary (quantiles, _sum and _count over the
// window's I/Os). A percentile that rests on too few I/Os to be placed
// (results.Confident) is left out rather than published as one; a
// failed result publishes nothing. Series are labelled by the pattern's
// fields, the direction (op: read, write, total), target and host, and
// in a fleet by member. Every metric is there, so o.Metric selects
// nothing; a bound metric, which would pick cells, is refused.
func writeOpenMetrics(w io.Writer, doc *results.Document, o Options) error {
	if err := CheckMetric("openmetrics", o.Metric); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	sources := omSources(doc)
	for _, f := range omFamilies {
		fmt.Fprintf(bw, "# TYPE %s %s\n", f.name, f.kind)
		if f.unit != "" {
			fmt.Fprintf(bw, "# UNIT %s %s\n", f.name, f.unit)
		}
		fmt.Fprintf(bw, "# HELP %s %s\n", f.name, f.help)
		for _, s := range sources {
			f.samples(bw, f.name, s)
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

func init() {
	Register("openmetrics", writeOpenMetrics)
	everyFigure["openmetrics"] = true
}

// omSource is one document's results with the labels they share.
type omSource struct {
	labels  []omLabel // host, target, and member in a fleet
	results []results.Result
	profile string
	at      time.Time // the run's end (its start if unfinished); zero if unknown
}

type omLabel struct{ name, value string }

func omSources(doc *results.Document) []omSource {
	if len(doc.Members) == 0 {
		return []omSource{omSource{
			labels:  []omLabel{{"host", doc.Host.Hostname}, {"target", doc.Target.Path}},
			results: doc.Results, profile: doc.Settings.Profile, at: runTime(doc.FinishedAt, doc.StartedAt),
		}}
	}
	out := make([]omSource, len(doc.Members))
	for i, m := range doc.Members {
		out[i] = omSource{
			labels:  []omLabel{{"member", m.Label}, {"host", m.Host.Hostname}, {"target", m.Target.Path}},
			results: m.Results, profile: m.Settings.Profile, at: memberTime(m),
		}
	}
	return out
}

// memberTime is a member's run time: its last result's start plus its
// length (a fleet member keeps its results, not its document's times).
func memberTime(m results.Member) time.Time {
	var at time.Time
	for _, r := range m.Results {
		if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
			if end := t.Add(time.Duration(r.DurationNS + r.RampNS)); end.After(at) {
				at = end
			}
		}
	}
	return at
}

func runTime(finished, started string) time.Time {
	for _, s := range []string{finished, started} {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

type omFamily struct {
	name, kind, unit, help string
	samples                func(w *bufio.Writer, name string, s omSource)
}

var omFamilies = []omFamily{
	{"iomatrix_iops", "gauge", "", "I/O operations per second over a pattern's measured window.",
		func(w *bufio.Writer, name string, s omSource) {
			omPerDirection(w, name, s, func(d omDirection) (float64, bool) { return d.iops, true })
		}},
	{"iomatrix_bandwidth_bytes_per_second", "gauge", "bytes_per_second", "Bytes per second over a pattern's measured window.",
		func(w *bufio.Writer, name string, s omSource) {
			omPerDirection(w, name, s, func(d omDirection) (float64, bool) { return d.bytesPerS, true })
		}},
	{"iomatrix_latency_seconds", "summary", "seconds",
		"Completion latency of a pattern's I/Os; quantiles resting on too few I/Os to be placed are left out.",
		omLatency},
	{"iomatrix_latency_distribution_seconds", "histogram", "seconds",
		"Completion latency of a pattern's I/Os, its whole distribution where the results file keeps it: cumulative buckets at 1, 2 and 5 of each decade from 1 µs to 100 s.",
		omDistribution},
	{"iomatrix_run_timestamp_seconds", "gauge", "seconds", "When the run ended, in seconds since the Unix epoch.",
		func(w *bufio.Writer, name string, s omSource) {
			if s.at.IsZero() {
				return
			}
			writeSample(w, name, append(s.labels, omLabel{"profile", s.profile}), float64(s.at.UnixNano())/1e9)
		}},
}

// omDirection is one direction's figures of a result.
type omDirection struct {
	op        string
	ios       uint64
	iops      float64
	bytesPerS float64
	lat       *results.Latency
}

func directions(r results.Result) []omDirection {
	window := float64(r.DurationNS) / 1e9
	perS := func(b uint64) float64 {
		if window <= 0 {
			return 0
		}
		return float64(b) / window
	}
	var ds []omDirection
	if r.Pattern.ReadPct > 0 {
		ds = append(ds, omDirection{"read", r.Read.IOs, r.Read.IOPS, perS(r.Read.Bytes), &r.Read.LatNS})
	}
	if r.Pattern.ReadPct < 100 {
		ds = append(ds, omDirection{"write", r.Write.IOs, r.Write.IOPS, perS(r.Write.Bytes), &r.Write.LatNS})
	}
	return append(ds, omDirection{"total", r.Total.IOs, r.Total.IOPS, perS(r.Total.Bytes), r.Total.LatNS})
}

func patternLabels(base []omLabel, r results.Result, op string) []omLabel {
	p := r.Pattern
	labels := append(append([]omLabel(nil), base...),
		omLabel{"pattern", r.Name}, omLabel{"access", string(p.Access)}, omLabel{"block_size_bytes", strconv.FormatInt(p.BlockSize, 10)},
		omLabel{"read_pct", strconv.Itoa(p.ReadPct)}, omLabel{"queue_depth", strconv.Itoa(p.QueueDepth)},
		omLabel{"jobs", strconv.Itoa(max(p.Jobs, 1))})
	if p.Sync != "" {
		// Only where set: an empty label is an absent one, and the
		// series of plain cells keep their label sets.
		labels = append(labels, omLabel{"sync", p.Sync})
	}
	return append(labels, omLabel{"op", op})
}

func omPerDirection(w *bufio.Writer, name string, s omSource, value func(omDirection) (float64, bool)) {
	for _, r := range s.results {
		if r.Error != nil {
			continue
		}
		for _, d := range directions(r) {
			if v, ok := value(d); ok {
				writeSample(w, name, patternLabels(s.labels, r, d.op), v)
			}
		}
	}
}

func omLatency(w *bufio.Writer, name string, s omSource) {
	for _, r := range s.results {
		if r.Error != nil {
			continue
		}
		for _, d := range directions(r) {
			l := d.lat
			if l == nil {
				continue
			}
			count := l.Samples(d.ios) // files older than the count field
			if count == 0 {
				continue
			}
			labels := patternLabels(s.labels, r, d.op)
			for _, q := range []struct {
				q    float64
				name string
				ns   uint64
			}{{0.5, "0.5", l.P50}, {0.9, "0.9", l.P90}, {0.99, "0.99", l.P99}, {0.999, "0.999", l.P999}, {0.9999, "0.9999", l.P9999}} {
				if !results.Confident(q.q*100, count) {
					continue
				}
				writeSample(w, name, append(labels, omLabel{"quantile", q.name}), float64(q.ns)/1e9)
			}
			writeSample(w, name+"_sum", labels, l.Mean*float64(count)/1e9)
			writeSample(w, name+"_count", labels, float64(count))
		}
	}
}

func writeSample(w *bufio.Writer, name string, labels []omLabel, v float64) {
	w.WriteString(name)
	w.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(l.name)
		w.WriteString(`="`)
		w.WriteString(labelEscaper.Replace(l.value))
		w.WriteByte('"')
	}
	w.WriteString("} ")
	w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	w.WriteByte('\n')
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// omBounds are the distribution's bucket bounds, in ns and as written in
// seconds: 1, 2 and 5 of each decade from 1 µs to 100 s, the same for
// every series so that they aggregate.
var omBounds = func() []omBound {
	var b []omBound
	for ns := uint64(1000); ns <= 100e9; ns *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if m*ns <= 100e9 {
				b = append(b, omBound{m * ns, strconv.FormatFloat(float64(m*ns)/1e9, 'g', -1, 64)})
			}
		}
	}
	return b
}()

type omBound struct {
	ns uint64
	le string
}

// omDistribution writes each direction's histogram, and the total's (the
// directions' union), as cumulative buckets: a bucket of the histogram
// counts below a bound when its value (hist.Value, the value percentiles
// take) does, so each count is exact to within one bucket (< 1.6 %).
func omDistribution(w *bufio.Writer, name string, s omSource) {
	for _, r := range s.results {
		if r.Error != nil {
			continue
		}
		for _, d := range directions(r) {
			var h *hist.Histogram
			if d.op == "total" {
				h, _ = r.LatencyHistogram()
			} else {
				h, _ = d.lat.Histogram()
			}
			if h == nil || h.Count() == 0 {
				continue
			}
			labels := patternLabels(s.labels, r, d.op)
			var below uint64
			i := 0
			for _, le := range omBounds {
				for ; i < hist.Buckets && hist.Value(i) <= le.ns; i++ {
					below += h.At(i)
				}
				writeSample(w, name+"_bucket", append(labels, omLabel{"le", le.le}), float64(below))
			}
			writeSample(w, name+"_bucket", append(labels, omLabel{"le", "+Inf"}), float64(h.Count()))
			writeSample(w, name+"_count", labels, float64(h.Count()))
			writeSample(w, name+"_sum", labels, float64(h.Sum())/1e9)
		}
	}
}
