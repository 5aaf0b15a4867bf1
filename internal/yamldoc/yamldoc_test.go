package yamldoc

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

// One document is read; a second one, even empty, is refused at its
// line; no document is an empty node.
func TestOne(t *testing.T) {
	for _, c := range []struct {
		data   string
		kind   yaml.Kind
		second int // the second document's line; 0: none
		bad    bool
	}{
		{"a: 1\n", yaml.DocumentNode, 0, false},
		{"---\na: 1\n", yaml.DocumentNode, 0, false},
		{"a: 1\n...\n", yaml.DocumentNode, 0, false},
		{"", 0, 0, false},
		{"# only a comment\n", 0, 0, false},
		{"a: 1\n---\nb: 2\n", 0, 2, false},
		{"a: 1\n---\n", 0, 2, false},
		{"a: 1\n---\n# nothing\n", 0, 2, false},
		{"---\na: 1\n---\nb: 2\n", 0, 3, false},
		{"a: [\n", 0, 0, true},
		{"a: 1\n---\nb: [\n", 0, 0, true},
	} {
		doc, err := One([]byte(c.data))
		var se *SecondError
		switch {
		case c.second > 0:
			if !errors.As(err, &se) || se.Line != c.second || doc != nil {
				t.Errorf("%q: %v, want a second document at line %d", c.data, err, c.second)
			}
		case c.bad:
			if err == nil || errors.As(err, &se) {
				t.Errorf("%q: %v, want the parser's error", c.data, err)
			}
		case err != nil || doc.Kind != c.kind:
			t.Errorf("%q: %+v, %v; want a node of kind %v", c.data, doc, err, c.kind)
		}
	}
}
