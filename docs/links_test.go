// Package docs holds iomatrix's manual; its test keeps the manual's links,
// and the pointers into it from the code, from going stale.
package docs

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, relative to this package.
const root = ".."

// page is a Markdown file: its path from the root, its headings' plain
// text and the anchors GitHub gives them, and its links.
type page struct {
	path     string
	headings []string
	anchors  map[string]bool
	links    []link
}

type link struct {
	line int
	dest string
}

var (
	headingLine = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	codeSpan    = regexp.MustCompile("`[^`\n]*`")
	inlineLink  = regexp.MustCompile(`!?\[[^\[\]]*\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refLink     = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+"[^"]*")?[ \t]*$`)
	mdLink      = regexp.MustCompile(`\[([^\[\]]*)\]\([^()]*\)`)
	scheme      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// A pointer from Go code into the manual: docs/PAGE.md, optionally
	// followed by the heading it means in quotes (escaped in a string
	// literal): see docs/sweeps.md, "--runtime auto".
	goPointer = regexp.MustCompile(`docs/([A-Za-z0-9_./-]+\.md)(?:,\s*\\?"([^"\\]+)\\?")?`)
)

// headingText is a heading as GitHub renders it: no code ticks, links
// reduced to their text.
func headingText(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	return strings.ReplaceAll(h, "`", "")
}

// slug is GitHub's anchor for a heading's text: lower case, spaces to
// '-', every other character that is not a letter, digit, '-' or '_'
// dropped.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parsePage reads a Markdown file: headings and links outside fenced
// code blocks and code spans.
func parsePage(t *testing.T, rel string) *page {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{path: rel, anchors: map[string]bool{}}
	seen := map[string]int{}
	lines := strings.Split(string(data), "\n")
	fenced := false
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
			continue
		}
		if m := headingLine.FindStringSubmatch(l); m != nil {
			text := headingText(m[2]) // a heading's code is part of its text
			p.headings = append(p.headings, text)
			a := slug(text)
			if n := seen[a]; n > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
			continue
		}
		// Blank code spans out, keeping the offsets for line numbers.
		lines[i] = codeSpan.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	prose := strings.Join(lines, "\n")
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatchIndex(prose, -1) {
			dest := prose[m[2]:m[3]]
			line := strings.Count(prose[:m[0]], "\n") + 1
			p.links = append(p.links, link{line: line, dest: dest})
		}
	}
	return p
}

// manual is README.md and every page under docs/.
func manual(t *testing.T) map[string]*page {
	t.Helper()
	pages := map[string]*page{"README.md": parsePage(t, "README.md")}
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		rel := filepath.ToSlash(filepath.Join("docs", filepath.Base(n)))
		pages[rel] = parsePage(t, rel)
	}
	return pages
}

// target resolves a relative link of the page at from: the file it names
// (from the root) and the anchor, if any.
func target(from, dest string) (file, anchor string) {
	file, anchor, _ = strings.Cut(dest, "#")
	if file == "" {
		return from, anchor
	}
	return filepath.ToSlash(filepath.Join(filepath.Dir(from), file)), anchor
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Exit status", "exit-status"},
		{"Caps: `--cap`, `cap verify`, `throttle`", "caps---cap-cap-verify-throttle"},
		{"`--runtime auto`: each cell stops when its figure is known", "--runtime-auto-each-cell-stops-when-its-figure-is-known"},
		{"Why the ring polls: iomatrix against fio at its best", "why-the-ring-polls-iomatrix-against-fio-at-its-best"},
		{"`cap show`, `cap cleanup`", "cap-show-cap-cleanup"},
		{"Fleets: `merge`, `k8s`", "fleets-merge-k8s"},
		{"The [cap model](caps.md) of `cgroup.Judge`", "the-cap-model-of-cgroupjudge"},
		{"Débit × µs_total", "débit--µs_total"},
	} {
		if got := slug(headingText(c.heading)); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// TestLinks checks every relative link of README.md and docs/*.md: the
// file it names exists and, for an #anchor, is a page with that heading.
func TestLinks(t *testing.T) {
	pages := manual(t)
	checked := 0
	for _, from := range slices.Sorted(maps.Keys(pages)) {
		p := pages[from]
		for _, l := range p.links {
			if l.dest == "" || scheme.MatchString(l.dest) {
				continue // absolute URLs are not this test's business
			}
			checked++
			file, anchor := target(from, l.dest)
			where := fmt.Sprintf("%s:%d: link %q", from, l.line, l.dest)
			if _, err := os.Stat(filepath.Join(root, file)); err != nil {
				t.Errorf("%s: %s does not exist", where, file)
				continue
			}
			if anchor == "" {
				continue
			}
			to, ok := pages[file]
			if !ok {
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: an anchor into %s, which is not a Markdown page", where, file)
					continue
				}
				to = parsePage(t, file)
			}
			if !to.anchors[anchor] {
				t.Errorf("%s: %s has no heading with the anchor #%s", where, file, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found in the manual: the parser is broken", checked)
	}
}

// TestEveryPageLinked wants every page under docs/ linked from the README
// and from the index, docs/README.md.
func TestEveryPageLinked(t *testing.T) {
	pages := manual(t)
	var wanted []string
	for rel := range pages {
		if strings.HasPrefix(rel, "docs/") && rel != "docs/README.md" {
			wanted = append(wanted, rel)
		}
	}
	slices.Sort(wanted)
	for _, from := range []string{"README.md", "docs/README.md"} {
		linked := map[string]bool{}
		for _, l := range pages[from].links {
			if !scheme.MatchString(l.dest) {
				file, _ := target(from, l.dest)
				linked[file] = true
			}
		}
		for _, rel := range wanted {
			if !linked[rel] {
				t.Errorf("%s does not link %s", from, rel)
			}
		}
	}
}

// TestGoPointers checks what the code says about the manual: a help text
// (in Go, or in a command's help file, cmd/iomatrix/help/*.txt) or a
// comment that names docs/PAGE.md names a page that exists, and the
// heading it quotes after it ("see docs/sweeps.md, \"--runtime auto\"")
// is the beginning of, or part of, one of that page's headings.
func TestGoPointers(t *testing.T) {
	pages := manual(t)
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		helpFile := strings.HasSuffix(path, ".txt") && filepath.Base(filepath.Dir(path)) == "help"
		if !(strings.HasSuffix(path, ".go") || helpFile) || filepath.Base(path) == "links_test.go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range goPointer.FindAllSubmatchIndex(data, -1) {
			found++
			file := "docs/" + string(data[m[2]:m[3]])
			where := fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), 1+strings.Count(string(data[:m[0]]), "\n"), data[m[0]:m[1]])
			p, ok := pages[file]
			if !ok {
				t.Errorf("%s: no page %s", where, file)
				continue
			}
			if m[4] < 0 {
				continue
			}
			want := strings.ToLower(string(data[m[4]:m[5]]))
			if !slices.ContainsFunc(p.headings, func(h string) bool { return strings.Contains(strings.ToLower(h), want) }) {
				t.Errorf("%s: %s has no heading with %q", where, file, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("no pointer from Go code into docs/ found: the pattern is broken")
	}
}
