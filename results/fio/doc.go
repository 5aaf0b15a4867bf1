// Package fio reads fio's JSON output (--output-format=json or json+) into
// iomatrix results documents, and writes them out for iomatrix import
// (Convert): an input adapter, with its own fixtures (captured from real
// fio runs) and fuzzer. Jobs it cannot map faithfully are reported as
// problems, never guessed.
package fio
