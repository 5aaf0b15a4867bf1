// Package results is the results document of iomatrix and its files: the
// types of schema_version 1 (a contract other tools read: fields are
// added, never renamed), reading with a diagnosis of wrong input, and the
// atomic save. It imports nothing of iomatrix but its errors
// (internal/fault), so every other package may import it: the engine
// produces its Results, the answers their documents and verdicts, the
// reports and commands consume them.
package results
