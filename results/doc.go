// Package results is the results document of iomatrix and its files: the
// types of schema_version 1 (a contract other tools read: fields are
// added, never renamed), reading with a diagnosis of wrong input, and the
// atomic save. It imports nothing of iomatrix, so every other package may
// import it: the engine produces its Results, the reports and commands
// consume them.
package results
