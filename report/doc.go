// Package report renders iomatrix's documents: it turns results into
// matrices (rows: block size × read percentage, columns: queue depth) and
// writes them as text, Markdown, CSV, JSON, HTML, XLSX or OpenMetrics;
// it compares two runs, merges a fleet's, and writes the text and HTML of
// every other document (an observation, a rehearsal, an isolation report,
// a cap verdict, the iocost chart). It renders, never decides: the
// verdicts it shows were reached by the packages that own them. Its
// writers do no I/O beyond the writer they are handed; the file-level
// calls of the commands that render saved documents (Render,
// CompareFiles, MergeFiles) read those files and write the output whole.
package report
