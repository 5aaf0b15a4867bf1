package results

import (
	"fmt"
	"syscall"
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
