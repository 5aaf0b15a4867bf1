// Package iotest is the engine: it runs a pattern on an open target
// (package target) and measures it, issuing every I/O itself through its
// own io_uring or blocking pread/pwrite (psync).
//
// Run measures one pattern, in a closed loop (a queue depth kept full) or
// an open loop (a rate: I/Os issued on a schedule), over a fixed window
// or one that ends once precise (Auto), and returns a results.Result;
// Options say how. ResolveEngine picks the engine, RingMode a ring's
// polling modes, CheckPassthrough what an NVMe passthrough target can
// run; Precondition brings an SSD to steady state first. The package
// never prints: progress goes through Options.Progress, notices through
// Options.Notice.
package iotest
