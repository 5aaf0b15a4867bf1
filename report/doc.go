// Package report renders iomatrix's documents: it turns results into
// matrices (rows: block size × read percentage, columns: queue depth) and
// writes them as text, Markdown, CSV, JSON, HTML, XLSX or OpenMetrics;
// it compares two runs, merges a fleet's, and writes the text and HTML of
// every other document (an observation, a rehearsal, an isolation report,
// a cap verdict, the iocost chart). It renders, never decides: the
// verdicts it shows were reached by the packages that own them. It is
// pure: no I/O beyond the writers it is handed.
package report
