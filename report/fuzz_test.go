package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func FuzzReadDocument(f *testing.F) {
	for _, fx := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", fx+".json"))
		if err == nil && len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"schema_version": 2, "tool": {"name": "iomatrix"}}`))
	f.Add([]byte(`{"schema_version": 1, "tool": {"name": "iomatrix"}, "results": [{"pattern": {"block_size": -1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := results.ReadDocument(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, results.ErrBadDocument) {
				t.Fatalf("error %v is not ErrBadDocument", err)
			}
			return
		}
		// Every renderer copes with whatever a document holds.
		for _, name := range []string{"text", "markdown", "csv", "html", "xlsx"} {
			w, _ := Lookup(name)
			var b bytes.Buffer
			if err := w(&b, doc, Options{Wide: name == "csv"}); err != nil && name != "xlsx" {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}
