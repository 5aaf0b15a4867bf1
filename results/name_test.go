package results

import (
	"strings"
	"testing"
)

// A name is printable text on one line.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"erp", "mariadb.service", "pod-1b2c3d4e/0123456789ab", "a b", "système"} {
		if err := CheckName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for name, says := range map[string]string{
		"":             "missing",
		"a\nFITS":      `"a\nFITS" holds a character that is not printable`,
		"a\tb":         `"a\tb" holds`,
		"a\rb":         `"a\rb" holds`,
		"a\x1b[2Jb":    `"a\x1b[2Jb" holds`,
		"a\u2028b":     `"a\u2028b" holds`,
		"a\xffb":       `"a\xffb" holds`,
		"\u00a0indent": `"\u00a0indent" holds`,
	} {
		if err := CheckName(name); err == nil || !strings.HasPrefix(err.Error(), says) {
			t.Errorf("%q: %v, want %q", name, err, says)
		}
	}
}
