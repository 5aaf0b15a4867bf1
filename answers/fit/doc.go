// Package fit answers "does this volume carry this workload?" from
// measured cells: a workload's need (ParseNeed, or several systems from a
// workload file, ReadWorkload), the verdict on a results document
// (Judge), the per-system caps that share the measured capacity
// (Workload.Shares), and the verdict's text and JSON forms (NewAnswer,
// WriteText, Answer.WriteJSON).
//
// It reads its figures through report's metrics (report.Metric, Bound,
// Flags), so it sits beside report and imports it; report never imports
// fit. It never prints on its own (its writers are handed an
// io.Writer), and its errors name no command-line flag.
package fit
