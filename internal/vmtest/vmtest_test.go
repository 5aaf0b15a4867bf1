package vmtest

import (
	"strings"
	"testing"
)

// The frames a guest writes parse back into the cases' results; a guest
// that never reported its end is an error, not a short list.
func TestParseFrames(t *testing.T) {
	frames := "@@KERNEL 6.1.0-57-cloud-amd64\r\n@@CASE a 0 120 aGVsbG8K -\n@@CASE b 3 5 - ZXJyCg==\n@@DONE\n"
	rs, kernel, err := parseFrames([]byte(frames))
	if err != nil || kernel != "6.1.0-57-cloud-amd64" || len(rs) != 2 {
		t.Fatalf("%v %q %+v", err, kernel, rs)
	}
	if rs[0].Stdout != "hello\n" || rs[0].Exit != 0 || rs[1].Exit != 3 || rs[1].Stderr != "err\n" || rs[1].Stdout != "" {
		t.Errorf("%+v", rs)
	}
	if _, _, err := parseFrames([]byte("@@CASE a 0 1 - -\n")); err == nil || !strings.Contains(err.Error(), "never reported") {
		t.Errorf("no end: %v", err)
	}
	if _, _, err := parseFrames([]byte("@@CASE a 0 -\n@@DONE\n")); err == nil {
		t.Error("a malformed frame parsed")
	}
}
