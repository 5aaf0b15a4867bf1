// Package capverify holds the cap verdict, all of it: the cap model
// (Expected: what a pattern can reach under a cap), the judgement of one
// capped cell (Judge, a pure function over a Cell; Check, over a recorded
// result and its uncapped baseline; CellJudge, what cap verify applies to
// each cell as it is measured), cap verify's protocol (Measure: the
// baseline, the capped cells, the verdict) and the whole run's verdict
// (Verdict: ok, fail, inconclusive or incomplete).
//
// The judgement is recorded as results.CapCheck and the verdict as
// results.CapVerdict: report renders them, the command line maps the
// verdict to an exit status. The kernel's side of a cap (limits,
// cgroups, the throttle's slices) is package cgroup's.
package capverify
