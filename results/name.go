package results

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckName refuses a name that a document holds and an answer writes
// (a system's, in an observation or a workload; a fleet member's label)
// that is empty or holds what is not printable: a newline, a tab, a
// control character, invalid UTF-8. Every answer writes a name on a line
// of its own, where such a character would write a line, or move the
// cursor, of its own.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("missing")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("%q holds a character that is not printable (a newline, a tab, a control character)", name)
	}
	return nil
}
