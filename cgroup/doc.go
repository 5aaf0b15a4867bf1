// Package cgroup runs workloads under Linux cgroup I/O limits (v1
// blkio.throttle.*, v2 io.max): it plans limits as plain data, applies them
// to a fresh cgroup, places a worker process inside, reads the kernel's
// counters back and removes the cgroup afterwards.
//
// It never imports iotest, report or profiles: the engine and the caps meet
// only in cmd/iomatrix.
package cgroup
