// Package cgroup is iomatrix's interface to the kernel's cgroup I/O
// controls (v1 blkio.throttle.*, v2 io.max and io.weight, through
// containerd/cgroups): it parses and plans limits as plain data
// (ParseCap, Limit), finds the controller and where a cgroup may go
// (Detect, Placement), creates or joins a cgroup, applies the limits and
// reads them back, places processes in it, reads the kernel's counters,
// lists the limits configured on a host (Show), removes leftovers
// (Cleanup), and states the throttle's timing (ThrottleSlice,
// AlignWindow).
//
// Whether a cap holds is not decided here: the cap model and the verdict
// are package capverify's. This package never imports the engine, report
// or profiles.
package cgroup
