// Package yamldoc reads a file that holds one YAML document, as every
// YAML file iomatrix reads does (a profile, a workload): a reader that
// took the first of several documents would drop the others in silence.
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// SecondError is a second document in a file of one.
type SecondError struct {
	// Line is where the second document starts: its "---".
	Line int
}

func (e *SecondError) Error() string {
	return fmt.Sprintf("line %d: a second YAML document: the file holds one (remove the ---)", e.Line)
}

// One is the document of data: its document node, whose Kind is 0 when
// data holds none (empty, or comments only). A second document, even an
// empty one after a trailing "---", is a SecondError; a syntax error is
// the YAML parser's.
func One(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		return nil, err
	}
	return nil, &SecondError{Line: next.Line}
}
