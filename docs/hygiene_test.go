package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// testFiles parses every _test.go file of the tree outside
// internal/testenv (testdata and hidden directories left out), with its
// comments, and calls f with each.
func testFiles(t *testing.T, f func(rel string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || rel == "internal/testenv") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		f(rel, fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// calls calls f with every call of file whose function is written
// X.Sel, with X an identifier (t.Skip, time.Sleep).
func calls(file *ast.File, f func(call *ast.CallExpr, x, sel string)) {
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if s, ok := call.Fun.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok {
				f(call, x.Name, s.Sel.Name)
			}
		}
		return true
	})
}

// A test skips only through internal/testenv, which skips on a laptop
// and fails under CI=true: a bare t.Skip would let CI pass without
// running the test (docs/testing.md, "The test suite").
func TestNoBareSkip(t *testing.T) {
	n := 0
	testFiles(t, func(rel string, fset *token.FileSet, file *ast.File) {
		n++
		calls(file, func(call *ast.CallExpr, x, sel string) {
			if sel == "Skip" || sel == "Skipf" || sel == "SkipNow" {
				t.Errorf("%s:%d: %s.%s: skip through internal/testenv (Require, Need, InGuest), which fails under CI=true",
					rel, fset.Position(call.Pos()).Line, x, sel)
			}
		})
	})
	if n < 100 {
		t.Fatalf("only %d test files found: the walk missed the tree", n)
	}
}

// sleepMark starts the comment that justifies a time.Sleep in a test:
// the sleep is what the test makes happen (a device that stalls, time
// passing inside a read the product times), not a guess at how long
// something takes.
const sleepMark = "sleep:"

// A test waits for the condition it needs (testenv.WaitFor, Until,
// Poll), never for a fixed time that a loaded machine overruns. A
// time.Sleep stays only where time passing is itself the test, with a
// comment saying so, starting "sleep:", that ends on its line or the
// line above (docs/testing.md, "The test suite").
func TestNoFixedSleep(t *testing.T) {
	testFiles(t, func(rel string, fset *token.FileSet, file *ast.File) {
		// A comment that starts with the mark justifies a sleep on its
		// last line or the line after it.
		justified := map[int]bool{}
		for _, g := range file.Comments {
			if text := strings.TrimSpace(strings.TrimPrefix(g.List[0].Text, "//")); strings.HasPrefix(text, sleepMark) {
				end := fset.Position(g.End()).Line
				justified[end], justified[end+1] = true, true
			}
		}
		calls(file, func(call *ast.CallExpr, x, sel string) {
			if line := fset.Position(call.Pos()).Line; x == "time" && sel == "Sleep" && !justified[line] {
				t.Errorf("%s:%d: time.Sleep: wait for the condition instead (testenv.WaitFor, Until, Poll), "+
					"or say why time must pass in a comment starting %q", rel, line, sleepMark)
			}
		})
	})
}
