// Package report turns results documents into matrices (rows: block size ×
// read percentage, columns: queue depth) and renders them as text,
// Markdown, CSV, JSON, HTML and XLSX; it also compares two runs and imports
// fio's JSON output. It is pure: no I/O beyond the writers it is handed.
package report
