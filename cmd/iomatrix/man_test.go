package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDir holds the committed man pages, relative to this package.
const manDir = "../../docs/man/man1"

// regenerateMan is what a failure tells the reader to run.
const regenerateMan = "go test ./cmd/iomatrix -run TestManPages -update"

// manDate matches the date argument of the .TH line: the pages carry
// none, so that regenerating them gives the same bytes on any day.
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*") "[^"]*"`)

// genManPages writes a page per command that `iomatrix --help` offers
// (hidden ones left out) into dir and returns their names.
func genManPages(t *testing.T, dir string) []string {
	t.Helper()
	root := newRootCommand(&globalOptions{stdout: io.Discard, stderr: io.Discard})
	// Execute adds these; the pages show the tree a user meets.
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	var visit func(*cobra.Command)
	visit = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no generation date in the page's history
		c.Long = preformatted(c.Long)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	// Date is required by the generator and then removed from each page.
	epoch := time.Unix(0, 0).UTC()
	header := &doc.GenManHeader{Section: "1", Date: &epoch, Source: "iomatrix", Manual: "iomatrix manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		t.Fatalf("generate man pages: %v", err)
	}
	names := manPageNames(t, dir)
	for _, name := range names {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !manDate.Match(b) {
			t.Fatalf("%s: no .TH line with a date to remove", name)
		}
		if err := os.WriteFile(path, manDate.ReplaceAll(b, []byte(`$1 ""`)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// preformatted makes a help text, written for a terminal at its own line
// breaks and indents (exit status tables, flag lists), a verbatim block
// of the page: the generator reads it as Markdown, which would refill
// the tables and read `*` and `_` as emphasis.
func preformatted(text string) string {
	if text == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n")
}

// manPageNames lists the files in dir (none when it does not exist).
func manPageNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestManPages fails when docs/man/man1 differs from the pages the
// command tree gives now: a help text, flag or command changed without
// the pages being regenerated. With -update it rewrites them.
func TestManPages(t *testing.T) {
	gen := t.TempDir()
	names := genManPages(t, gen)
	if !slices.Contains(names, "iomatrix.1") || !slices.Contains(names, "iomatrix-sweep.1") {
		t.Fatalf("generated %v: no iomatrix.1 or iomatrix-sweep.1", names)
	}
	for _, name := range names {
		if strings.HasPrefix(name, "iomatrix-__") || strings.HasSuffix(name, "-help.1") {
			t.Errorf("generated %s: a hidden command or cobra's help command has no page", name)
		}
	}
	committed := manPageNames(t, manDir)
	if *updateGolden {
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range committed {
			if !slices.Contains(names, name) {
				if err := os.Remove(filepath.Join(manDir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join(gen, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(manDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	rel := "docs/man/man1/"
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(gen, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(manDir, name))
		switch {
		case os.IsNotExist(err):
			t.Errorf("%s%s is missing", rel, name)
		case err != nil:
			t.Error(err)
		case !bytes.Equal(got, want):
			t.Errorf("%s%s is stale", rel, name)
		}
	}
	for _, name := range committed {
		if !slices.Contains(names, name) {
			t.Errorf("%s%s is extra: no command has that page", rel, name)
		}
	}
	if t.Failed() {
		t.Logf("regenerate the pages with: %s", regenerateMan)
	}
}

// TestManPagesStable generates the pages twice, with another home, working
// directory and KUBECONFIG, and wants the same bytes: a page must not
// depend on the day, the user or the machine it was made on.
func TestManPagesStable(t *testing.T) {
	first := t.TempDir()
	names := genManPages(t, first)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "elsewhere"))
	t.Chdir(t.TempDir())
	second := t.TempDir()
	if again := genManPages(t, second); !slices.Equal(names, again) {
		t.Fatalf("pages differ between two runs: %v and %v", names, again)
	}
	for _, name := range names {
		a, err := os.ReadFile(filepath.Join(first, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(second, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}
