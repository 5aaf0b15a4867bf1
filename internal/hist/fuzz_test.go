package hist

import (
	"encoding/json"
	"testing"
)

// A compact histogram from a file either is refused or is one that writes
// back as it was read.
func FuzzCompact(f *testing.F) {
	f.Add([]byte(`{"scheme":"log-linear-64","sum":9300,"first":100,"counts":"1 -899 2 1"}`), uint64(4), uint64(100), uint64(5000))
	f.Add([]byte(`{"scheme":"log-linear-64","sum":0,"first":0,"counts":"-9223372036854775808 1"}`), uint64(1), uint64(0), uint64(0))
	f.Add([]byte(`{"scheme":"log-linear-64","sum":5,"first":2239,"counts":"1"}`), uint64(1), MaxValue, MaxValue)
	f.Fuzz(func(t *testing.T, data []byte, count, minV, maxV uint64) {
		var c Compact
		if json.Unmarshal(data, &c) != nil {
			return
		}
		h, err := c.Histogram(count, minV, maxV)
		if err != nil {
			return
		}
		back, err := h.Compact().Histogram(count, minV, maxV)
		if err != nil || !back.Equal(h) {
			t.Fatalf("%s read, written and read again: %v", data, err)
		}
	})
}
