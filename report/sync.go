package report

import (
	"fmt"
	"strings"
)

// DescribeSync says what a pattern's durable-write mode (its canonical
// form) does, for a reader.
func DescribeSync(sync string) string {
	kind, n, linked := strings.Cut(sync, ":")
	if !linked {
		return sync + ": each write completes once it is durable (RWF_DSYNC)"
	}
	every := "each write"
	if n != "1" {
		every = "every " + ordinal(n) + " write"
	}
	return fmt.Sprintf("%s: %s is followed by an %s, its wait counted in that write's latency", sync, every, kind)
}

// ordinal spells a whole number n as 2nd, 3rd, 8th, 11th, 21st.
func ordinal(n string) string {
	suffix := "th"
	if len(n) < 2 || n[len(n)-2] != '1' {
		switch n[len(n)-1] {
		case '1':
			suffix = "st"
		case '2':
			suffix = "nd"
		case '3':
			suffix = "rd"
		}
	}
	return n + suffix
}
