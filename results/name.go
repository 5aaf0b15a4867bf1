package results

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckSystemName refuses a system's name (an ObservedSystem's, a
// workload's) that is empty or holds what is not printable: a newline, a
// tab, a control character, invalid UTF-8. Every answer writes a name on
// a line of its own, where such a character would write a line, or move
// the cursor, of its own.
func CheckSystemName(name string) error {
	switch {
	case name == "":
		return errors.New("missing")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("%q holds a character that is not printable (a newline, a tab, a control character)", name)
	}
	return nil
}
