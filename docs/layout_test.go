package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module path every package of the tree is under.
const module = "github.com/iomatrix/iomatrix"

// goPackage is a package of the tree as its non-test files make it.
type goPackage struct {
	dir     string   // from the root, slash-separated: "iotest/pattern"
	name    string   // the package clause's name
	doc     string   // the package comment
	imports []string // the tree's packages it imports, by dir, sorted
}

// treePackages reads every package of the tree: each directory with a
// non-test Go file, testdata and hidden directories left out.
func treePackages(t *testing.T) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		p := pkgs[dir]
		if p == nil {
			p = &goPackage{dir: dir, name: f.Name.Name}
			pkgs[dir] = p
		}
		if f.Doc != nil {
			p.doc += f.Doc.Text()
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if own, ok := strings.CutPrefix(path, module+"/"); ok && !slices.Contains(p.imports, own) {
				p.imports = append(p.imports, own)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		slices.Sort(p.imports)
	}
	return pkgs
}

// layoutRow is one package's row of layout.md's table of packages.
type layoutRow struct {
	line    int
	floor   int
	imports []string
}

var (
	// A row of the table: | `dir` | floor | holds | imports |.
	layoutRowLine = regexp.MustCompile("^\\| `([a-z0-9/]+)` \\| (\\d+) \\| .* \\| (.*) \\|$")
	codeName      = regexp.MustCompile("`([a-z0-9/]+)`")
)

// readLayout reads the table of packages in layout.md.
func readLayout(t *testing.T) map[string]layoutRow {
	t.Helper()
	data, err := os.ReadFile("layout.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]layoutRow{}
	for i, line := range strings.Split(string(data), "\n") {
		m := layoutRowLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		floor, _ := strconv.Atoi(m[2])
		r := layoutRow{line: i + 1, floor: floor}
		for _, im := range codeName.FindAllStringSubmatch(m[3], -1) {
			r.imports = append(r.imports, im[1])
		}
		slices.Sort(r.imports)
		if _, dup := rows[m[1]]; dup {
			t.Errorf("layout.md:%d: %s listed twice", i+1, m[1])
		}
		rows[m[1]] = r
	}
	if len(rows) == 0 {
		t.Fatal("layout.md: no table of packages found")
	}
	return rows
}

// docs/layout.md is the map of the tree: every package is in its table,
// with the packages of the tree it imports, exactly; each stands on a
// floor above every package it imports, so no import runs upward (and
// none can close a circle); and each says in its package comment what it
// holds.
func TestLayoutHoldsTheTree(t *testing.T) {
	pkgs := treePackages(t)
	rows := readLayout(t)
	for dir, p := range pkgs {
		r, ok := rows[dir]
		if !ok {
			t.Errorf("layout.md: package %s is not in the table", dir)
			continue
		}
		if !slices.Equal(r.imports, p.imports) {
			t.Errorf("layout.md:%d: %s imports %v, the table says %v", r.line, dir, p.imports, r.imports)
		}
		for _, im := range p.imports {
			if below, ok := rows[im]; ok && below.floor >= r.floor {
				t.Errorf("layout.md:%d: %s (floor %d) imports %s (floor %d): an import that does not go down", r.line, dir, r.floor, im, below.floor)
			}
		}
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command "
		}
		if !strings.HasPrefix(p.doc, want) {
			t.Errorf("%s: its package comment should begin %q and say what it holds, not %q", dir, want, firstLine(p.doc))
		}
	}
	for dir, r := range rows {
		if _, ok := pkgs[dir]; !ok {
			t.Errorf("layout.md:%d: %s is no package of the tree", r.line, dir)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
