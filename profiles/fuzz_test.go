package profiles

import (
	"errors"
	"testing"

	"github.com/iomatrix/iomatrix/iotest/pattern"
)

func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		data, err := builtinFiles.ReadFile("builtin/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\nmatrix:\n  - block_sizes: []\n"))
	f.Add([]byte("name: [\n"))
	f.Add([]byte("{a: &a [*a]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			return
		}
		if p.Name == "" || len(p.Patterns) == 0 {
			t.Fatalf("accepted a profile without name or patterns: %+v", p)
		}
		seen := map[string]bool{}
		for _, pat := range p.Patterns {
			if err := pattern.Validate(pat); err != nil {
				t.Fatalf("accepted an invalid pattern: %v", err)
			}
			if seen[pat.Name()] {
				t.Fatalf("accepted duplicate %s", pat.Name())
			}
			seen[pat.Name()] = true
		}
	})
}
