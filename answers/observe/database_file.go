package observe

import "strings"

// DatabaseFile is the file a database source as a user writes it
// ([SYSTEM=]file:PATH, see ParseMySQLSpec and ParsePostgresSpec) reads
// its connection string from, or "" for a source that reads none: the
// command line holds it to the rule that no output of a command
// replaces one of its inputs.
func DatabaseFile(arg string) string {
	if i := strings.IndexByte(arg, '='); i > 0 && systemName.MatchString(arg[:i]) {
		arg = arg[i+1:]
	}
	if path, ok := strings.CutPrefix(arg, "file:"); ok {
		return path
	}
	return ""
}
