package report

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"testing"
)

// This file reads a workbook the way a streaming reader does, with
// encoding/xml token by token and without excelize, so that the workbook
// is checked by a reader that shares none of the writer's code. Like many
// streaming readers and importers it trusts each sheet's declared
// <dimension>: it sizes its grid from it and drops the cells outside.

// streamedSheet is one worksheet as the streaming reader saw it.
type streamedSheet struct {
	dimension string            // the declared ref
	used      string            // the range the sheet's cell elements span
	cells     map[string]string // value by reference, within the dimension
	dropped   int               // cells outside the declared dimension
}

// streamWorkbook reads every sheet of an XLSX file, in workbook order.
func streamWorkbook(t *testing.T, data []byte) (names []string, sheets map[string]*streamedSheet) {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a zip file: %v", err)
	}
	open := func(name string) *xml.Decoder {
		f, err := z.Open(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return xml.NewDecoder(f)
	}
	// Relationship targets are relative to xl/ unless absolute.
	targets := map[string]string{}
	eachElement(t, open("xl/_rels/workbook.xml.rels"), func(d *xml.Decoder, e xml.StartElement) {
		if e.Name.Local == "Relationship" {
			target := attr(e, "", "Target")
			if strings.HasPrefix(target, "/") {
				target = strings.TrimPrefix(target, "/")
			} else {
				target = path.Join("xl", target)
			}
			targets[attr(e, "", "Id")] = target
		}
	})
	var shared []string
	if f, err := z.Open("xl/sharedStrings.xml"); err == nil {
		_ = f.Close()
		eachElement(t, open("xl/sharedStrings.xml"), func(d *xml.Decoder, e xml.StartElement) {
			if e.Name.Local == "si" {
				shared = append(shared, textOf(t, d, e))
			}
		})
	}
	sheets = map[string]*streamedSheet{}
	const relNS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	eachElement(t, open("xl/workbook.xml"), func(d *xml.Decoder, e xml.StartElement) {
		if e.Name.Local == "sheet" {
			name := attr(e, "", "name")
			names = append(names, name)
			sheets[name] = streamSheet(t, open(targets[attr(e, relNS, "id")]), shared)
		}
	})
	return names, sheets
}

// streamSheet reads one worksheet's XML.
func streamSheet(t *testing.T, d *xml.Decoder, shared []string) *streamedSheet {
	s := &streamedSheet{cells: map[string]string{}}
	var lo, hi [2]int // declared: first and last (column, row)
	var minUsed, maxUsed [2]int
	eachElement(t, d, func(d *xml.Decoder, e xml.StartElement) {
		switch e.Name.Local {
		case "dimension":
			s.dimension = attr(e, "", "ref")
			first, last, _ := strings.Cut(s.dimension, ":")
			if last == "" {
				last = first
			}
			lo, hi = cellCoordinates(t, first), cellCoordinates(t, last)
		case "c":
			ref := attr(e, "", "r")
			at := cellCoordinates(t, ref)
			if minUsed == [2]int{} {
				minUsed, maxUsed = at, at
			}
			for i := range at {
				minUsed[i], maxUsed[i] = min(minUsed[i], at[i]), max(maxUsed[i], at[i])
			}
			v := cellValue(t, d, e, shared)
			if at[0] < lo[0] || at[0] > hi[0] || at[1] < lo[1] || at[1] > hi[1] {
				s.dropped++
				return
			}
			if v != "" {
				s.cells[ref] = v
			}
		}
	})
	s.used = cellName(minUsed) + ":" + cellName(maxUsed)
	if minUsed == maxUsed {
		s.used = cellName(minUsed)
	}
	return s
}

// cellValue reads the value of the <c> element e: a shared string, an
// inline string, or the raw text of a number or boolean.
func cellValue(t *testing.T, d *xml.Decoder, e xml.StartElement, shared []string) string {
	typ := attr(e, "", "t")
	var v string
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("cell %s: %v", attr(e, "", "r"), err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "v" || tok.Name.Local == "is" {
				v = textOf(t, d, tok)
			}
		case xml.EndElement:
			if tok.Name.Local != "c" {
				continue
			}
			if typ == "s" {
				i, err := strconv.Atoi(v)
				if err != nil || i < 0 || i >= len(shared) {
					t.Fatalf("cell %s: shared string %q of %d", attr(e, "", "r"), v, len(shared))
				}
				return shared[i]
			}
			return v
		}
	}
}

// eachElement calls f with every start element of d, in document order.
func eachElement(t *testing.T, d *xml.Decoder, f func(*xml.Decoder, xml.StartElement)) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := tok.(xml.StartElement); ok {
			f(d, e)
		}
	}
}

// textOf is the character data inside e, through to its end.
func textOf(t *testing.T, d *xml.Decoder, e xml.StartElement) string {
	var b strings.Builder
	for depth := 1; depth > 0; {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("<%s>: %v", e.Name.Local, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			b.Write(tok)
		}
	}
	return b.String()
}

func attr(e xml.StartElement, space, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local && (space == "" || a.Name.Space == space) {
			return a.Value
		}
	}
	return ""
}

// cellCoordinates turns "AB12" into (28, 12).
func cellCoordinates(t *testing.T, ref string) [2]int {
	letters := strings.TrimRight(ref, "0123456789")
	row, err := strconv.Atoi(ref[len(letters):])
	if letters == "" || err != nil || row < 1 {
		t.Fatalf("bad cell reference %q", ref)
	}
	col := 0
	for _, c := range letters {
		if c < 'A' || c > 'Z' {
			t.Fatalf("bad cell reference %q", ref)
		}
		col = col*26 + int(c-'A'+1)
	}
	return [2]int{col, row}
}

// cellName turns (28, 12) into "AB12".
func cellName(at [2]int) string {
	var letters []byte
	for c := at[0]; c > 0; c = (c - 1) / 26 {
		letters = append([]byte{byte('A' + (c-1)%26)}, letters...)
	}
	return fmt.Sprintf("%s%d", letters, at[1])
}

func TestCellNames(t *testing.T) {
	for ref, at := range map[string][2]int{"A1": {1, 1}, "Z9": {26, 9}, "AA10": {27, 10}, "BB54": {54, 54}, "AZ3": {52, 3}} {
		if got := cellCoordinates(t, ref); got != at {
			t.Errorf("%s: %v, want %v", ref, got, at)
		}
		if got := cellName(at); got != ref {
			t.Errorf("%v: %s, want %s", at, got, ref)
		}
	}
}

// Every sheet declares the range it uses, and a streaming reader that
// trusts the declaration reads every value: the matrices, the long-form
// results and the settings.
func TestXLSXStreamingReader(t *testing.T) {
	for _, fx := range fixtures {
		doc := loadFixture(t, fx)
		names, sheets := streamWorkbook(t, render(t, writeXLSX, doc, Options{}))
		m := Build(doc.Results)
		if len(names) != len(m.Tables)+2 {
			t.Fatalf("%s: sheets %v", fx, names)
		}
		for _, name := range names {
			s := sheets[name]
			if s.dimension != s.used || s.dropped > 0 {
				t.Errorf("%s %s: declares %s, uses %s: a streaming reader drops %d cells", fx, name, s.dimension, s.used, s.dropped)
			}
		}
		for i, tb := range m.Tables {
			s := sheets[names[i]]
			if s.cells["A1"] != tb.Title {
				t.Errorf("%s %s: A1 %q, want the title %q", fx, names[i], s.cells["A1"], tb.Title)
			}
			for r := range tb.Rows {
				for c, cell := range tb.Cells[r] {
					ref := cellName([2]int{c + 2, 5 + r})
					got, ok := s.cells[ref]
					if cell == nil {
						if ok {
							t.Errorf("%s %s %s: a missing cell reads %q", fx, names[i], ref, got)
						}
						continue
					}
					if v, err := strconv.ParseFloat(got, 64); err != nil || v != cell.Value {
						t.Errorf("%s %s %s: reads %q, wrote %v", fx, names[i], ref, got, cell.Value)
					}
				}
			}
		}
		resultsSheet := sheets["results"]
		for c, col := range csvColumns {
			if got := resultsSheet.cells[cellName([2]int{c + 1, 1})]; got != col.name {
				t.Errorf("%s results: column %d is %q, want %q", fx, c+1, got, col.name)
			}
			for r := range doc.Results {
				want := col.get(&doc.Results[r])
				got := resultsSheet.cells[cellName([2]int{c + 1, r + 2})]
				if x, errx := strconv.ParseFloat(want, 64); errx == nil && col.name != "name" {
					if y, erry := strconv.ParseFloat(got, 64); erry != nil || x != y {
						t.Errorf("%s results %s row %d: %q, want %s", fx, col.name, r+2, got, want)
					}
				} else if got != want {
					t.Errorf("%s results %s row %d: %q, want %q", fx, col.name, r+2, got, want)
				}
			}
		}
		settings := sheets["settings"]
		if settings.cells["A4"] != "target" || settings.cells["B4"] != doc.Target.Path {
			t.Errorf("%s settings: %q = %q", fx, settings.cells["A4"], settings.cells["B4"])
		}
	}
}
