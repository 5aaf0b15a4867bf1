package docs

import (
	"go/ast"
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

// libraries are the packages that are neither a command (cmd/iomatrix,
// the developer commands under scripts) nor test support, nor the one
// package that reads /sys and /proc.
func libraries(pkgs map[string]*goPackage) []string {
	var out []string
	for dir, p := range pkgs {
		switch {
		case p.name == "main", dir == "internal/sysfs", dir == "internal/testenv", strings.HasPrefix(dir, "internal/vmtest"),
			dir == "answers/k8s/k8stest":
			continue
		}
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// errorCalls are the calls whose string arguments make an error message.
var errorCalls = map[string]bool{"fmt.Errorf": true, "errors.New": true, "fault.Input": true, "fault.Privilege": true,
	"pattern.Fieldf": true, "Fieldf": true, "fieldf": true}

// flagLike is a command-line flag spelled in a message.
var flagLike = regexp.MustCompile(`(^|[^-\w])--[a-z]`)

// fioSyntax are messages that quote fio's own command line, not a flag
// of iomatrix's: crosscheck checks the options given to fio.
var fioSyntax = []string{`%q is not a fio option (--name or --name=value)`, `%s --version: %w`}

// The libraries read /sys and /proc only through internal/sysfs, whose
// roots the commands pass down (no sysfs.Default below a command, no path
// under /sys or /proc written in), and their error messages name no
// command-line flag: the command line names the flag for the option at
// fault.
func TestLibrariesKeepToTheirSide(t *testing.T) {
	pkgs := treePackages(t)
	for _, dir := range libraries(pkgs) {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			checkLibraryFile(t, file)
		}
	}
}

func checkLibraryFile(t *testing.T, file string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, file)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(n.Value); err == nil && (s == "/sys" || s == "/proc" || strings.HasPrefix(s, "/sys/") || strings.HasPrefix(s, "/proc/")) {
				t.Errorf("%s:%d: %q: a path under /sys or /proc outside internal/sysfs", rel, fset.Position(n.Pos()).Line, s)
			}
		case *ast.CallExpr:
			name := callName(n.Fun)
			if name == "sysfs.Default" {
				t.Errorf("%s:%d: sysfs.Default() below the command line: take the FS as a parameter", rel, fset.Position(n.Pos()).Line)
			}
			if !errorCalls[name] {
				return true
			}
			for _, a := range n.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && flagLike.MatchString(s) && !slices.Contains(fioSyntax, s) {
					t.Errorf("%s:%d: %s(%q): an error message that names a flag", rel, fset.Position(lit.Pos()).Line, name, s)
				}
			}
		}
		return true
	})
}

// callName is a call's function as written: "fmt.Errorf", "fieldf".
func callName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}
