package results

import (
	"fmt"
	"math"
	"syscall"

	"github.com/iomatrix/iomatrix/internal/hist"
)

// Latency is the JSON summary of a histogram (field names are the results
// contract).
type Latency struct {
	Min  uint64  `json:"min"`
	Mean float64 `json:"mean"`
	P50  uint64  `json:"p50"`
	P90  uint64  `json:"p90"`
	// P95 is what iocost's QoS rule reads (absent in older files).
	P95   uint64 `json:"p95,omitempty"`
	P99   uint64 `json:"p99"`
	P999  uint64 `json:"p99.9"`
	P9999 uint64 `json:"p99.99"`
	Max   uint64 `json:"max"`
	// Count is the number of latencies recorded: it equals the direction's
	// ios.
	Count uint64 `json:"count"`
	// LowConfidence lists the percentiles that rest on too few latencies
	// to be placed (see Confident), space-separated: "p99.9 p99.99".
	LowConfidence string `json:"low_confidence,omitempty"`
	// Hist is the whole distribution the figures above were taken from,
	// in compact form (absent in older files and in summaries that are
	// another's union: a total is its directions' merged). Its count, min
	// and max are the summary's.
	Hist *hist.Compact `json:"hist,omitempty"`
}

// Summarize renders a histogram as the results file keeps it: its figures
// and its compact form.
func Summarize(h *hist.Histogram) Latency {
	l := Latency{
		Min: h.Min(), Mean: math.Round(h.Mean()*10) / 10,
		P50: h.Percentile(50), P90: h.Percentile(90), P95: h.Percentile(95), P99: h.Percentile(99),
		P999: h.Percentile(99.9), P9999: h.Percentile(99.99), Max: h.Max(), Count: h.Count(),
		Hist: h.Compact(),
	}
	l.MarkConfidence(h.Count())
	return l
}

// Histogram is the summary's whole distribution; nil without one.
func (l *Latency) Histogram() (*hist.Histogram, error) {
	if l == nil || l.Hist == nil {
		return nil, nil
	}
	return l.Hist.Histogram(l.Count, l.Min, l.Max)
}

// Figures is the summary without its histogram: the figures a reader
// compares.
func (l Latency) Figures() Latency {
	l.Hist = nil
	return l
}

// Confident tells whether the q-th percentile (99, 99.9, 99.99) of count
// latencies can be placed: at least ten of them lie beyond it, so p99
// needs 1,000, p99.9 10,000 and p99.99 100,000. With fewer, the figure is
// one of the slowest handful of I/Os, and the next run may well put it
// far from there.
func Confident(q float64, count uint64) bool {
	return float64(count)*(100-q) >= 1000-1e-6
}

// Samples is the number of latencies the percentiles rest on: Count, or
// for a summary written without it, ios (the direction's or the total's
// I/O count, which Count equals).
func (l Latency) Samples(ios uint64) uint64 {
	if l.Count > 0 {
		return l.Count
	}
	return ios
}

// Percentiles names the tail percentiles of a Latency that may be
// low-confidence, with their quantiles.
var Percentiles = []struct {
	Name string
	Q    float64
}{{"p99", 99}, {"p99.9", 99.9}, {"p99.99", 99.99}}

// MarkConfidence sets LowConfidence from the number of latencies the
// summary rests on.
func (l *Latency) MarkConfidence(samples uint64) {
	l.LowConfidence = ""
	if samples == 0 {
		return // nothing measured: no figure to doubt
	}
	for _, p := range Percentiles {
		if !Confident(p.Q, samples) {
			if l.LowConfidence != "" {
				l.LowConfidence += " "
			}
			l.LowConfidence += p.Name
		}
	}
}

// IOError describes the first failed I/O of a job.
type IOError struct {
	Op     string `json:"op"` // "read" or "write"
	Offset int64  `json:"offset"`
	Errno  int    `json:"errno,omitempty"`
	// NVMeStatus is the status a drive completed an NVMe passthrough
	// command with, when it is not success.
	NVMeStatus int    `json:"nvme_status,omitempty"`
	Msg        string `json:"message"`
}

func (e *IOError) Error() string {
	return fmt.Sprintf("%s at offset %d: %s", e.Op, e.Offset, e.Msg)
}

// Unwrap exposes the errno so callers can use errors.Is(err, syscall.ENOSPC).
func (e *IOError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return syscall.Errno(e.Errno)
}

// LatencyHistogram is a result's whole completion latency distribution,
// both directions merged (the histogram of total.lat_ns); nil where a
// direction that did I/O has none (older files, fio without json+).
func (r *Result) LatencyHistogram() (*hist.Histogram, error) {
	return unionOf(&r.Read, &r.Write, func(d *DirStats) *Latency { return &d.LatNS })
}

// ResponseHistogram is LatencyHistogram of an open loop's response times;
// nil in a closed-loop result.
func (r *Result) ResponseHistogram() (*hist.Histogram, error) {
	return unionOf(&r.Read, &r.Write, func(d *DirStats) *Latency { return d.ResponseLatNS })
}

func unionOf(read, write *DirStats, lat func(*DirStats) *Latency) (*hist.Histogram, error) {
	var all *hist.Histogram
	for _, d := range []*DirStats{read, write} {
		if d.IOs == 0 {
			continue
		}
		h, err := lat(d).Histogram()
		if h == nil || err != nil {
			return nil, err
		}
		if all == nil {
			all = h
		} else {
			all.Merge(h)
		}
	}
	return all, nil
}

// checkHistograms refuses a histogram that does not agree with its
// summary: every reader would draw or merge it as it is.
func (r *Result) checkHistograms() error {
	for _, l := range []struct {
		name string
		lat  *Latency
	}{
		{"read.lat_ns", &r.Read.LatNS}, {"write.lat_ns", &r.Write.LatNS},
		{"read.response_lat_ns", r.Read.ResponseLatNS}, {"write.response_lat_ns", r.Write.ResponseLatNS},
	} {
		if _, err := l.lat.Histogram(); err != nil {
			return fmt.Errorf("%s.hist: %w", l.name, err)
		}
	}
	return nil
}

// Union is the latency of several sets of I/Os as one, from the union of
// their histograms (nil stands for a set without I/O); nil when none did
// I/O, or one that did kept no histogram.
func Union(ls []*Latency) (*Latency, error) {
	var all hist.Histogram
	for _, l := range ls {
		if l == nil {
			continue
		}
		h, err := l.Histogram()
		if h == nil || err != nil {
			return nil, err
		}
		all.Merge(h)
	}
	if all.Count() == 0 {
		return nil, nil
	}
	u := Summarize(&all)
	return &u, nil
}
