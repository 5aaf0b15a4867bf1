// Package fit answers "does this volume carry this workload?" from
// measured cells: a workload's need (ParseNeed, or several systems from a
// workload file, ReadWorkload; ReadNeed for either), the verdict on a
// results document (Judge; JudgeFile reads it), the per-system caps that
// share the measured capacity (Workload.Shares), the verdict's text and
// JSON forms (NewAnswer, Write), and what does not fit as an error
// (Answer.Failure).
//
// It reads its figures through report's metrics (report.Metric, Bound,
// Flags), so it sits beside report and imports it; report never imports
// fit. It never prints on its own (its writers are handed an
// io.Writer), and its errors name no command-line flag.
package fit
