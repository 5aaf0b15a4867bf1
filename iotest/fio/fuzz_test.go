package fio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/report"
)

func FuzzImport(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Add([]byte("note: x\n{\"fio version\": \"fio-3.33\", \"jobs\": [{}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, _, err := Import("fuzz.json", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range doc.Results {
			if err := pattern.Validate(r.Pattern); err != nil {
				t.Fatalf("imported an invalid pattern %+v: %v", r.Pattern, err)
			}
		}
		// Whatever imports renders.
		var b bytes.Buffer
		write, _ := report.Lookup("text")
		if err := write(&b, doc, report.Options{}); err != nil {
			t.Fatal(err)
		}
	})
}
