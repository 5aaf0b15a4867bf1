package results

import (
	"fmt"
	"syscall"
)

// Latency is the JSON summary of a histogram (field names are the results
// contract).
type Latency struct {
	Min   uint64  `json:"min"`
	Mean  float64 `json:"mean"`
	P50   uint64  `json:"p50"`
	P90   uint64  `json:"p90"`
	P99   uint64  `json:"p99"`
	P999  uint64  `json:"p99.9"`
	P9999 uint64  `json:"p99.99"`
	Max   uint64  `json:"max"`
	// Count is the number of latencies recorded: it equals the direction's
	// ios.
	Count uint64 `json:"count"`
}

// IOError describes the first failed I/O of a job.
type IOError struct {
	Op     string `json:"op"` // "read" or "write"
	Offset int64  `json:"offset"`
	Errno  int    `json:"errno,omitempty"`
	Msg    string `json:"message"`
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
