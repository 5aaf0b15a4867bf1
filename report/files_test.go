package report

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// Render refuses a format it cannot write before it writes anything, as
// bad input that says which: a binary one bound for a terminal, an
// output file whose extension names none of the document's formats.
func TestRenderFormatError(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.pdf")
	for _, tc := range []struct {
		r    Request
		want FormatError
	}{
		{Request{Path: "testdata/capped.json", Format: "xlsx", Metric: "iops", Terminal: true}, FormatError{Binary: "xlsx"}},
		{Request{Path: "testdata/capped.json", Format: "text", Metric: "iops", Out: out}, FormatError{Out: out}},
	} {
		var fe *FormatError
		err := Render(io.Discard, tc.r)
		if !errors.As(err, &fe) || !errors.As(err, new(*fault.InputError)) || fe.Binary != tc.want.Binary || fe.Out != tc.want.Out || fe.Observation {
			t.Errorf("%+v: %v, want bad input %+v", tc.r, err, tc.want)
		}
	}
}
