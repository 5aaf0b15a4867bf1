// Package report turns results documents into matrices (rows: block size ×
// read percentage, columns: queue depth) and renders them as text,
// Markdown, CSV, JSON, HTML, XLSX and OpenMetrics; it also compares two
// runs, merges a fleet, and renders every other document. Its writers do
// no I/O beyond the writer they are handed; the file-level calls of the
// commands that render saved documents (Render, CompareFiles, MergeFiles)
// read those files and write the output whole.
package report
