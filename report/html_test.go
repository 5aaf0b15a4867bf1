package report

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

func renderHTML(t *testing.T, fixture string) []byte {
	t.Helper()
	return htmlOf(t, loadFixture(t, fixture))
}

func htmlOf(t *testing.T, doc *results.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestHTMLGoldenAndSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|src=|@import|url\(|https?://[^"]*"`)
	for _, fx := range fixtures {
		page := renderHTML(t, fx)
		golden(t, fx+".html", page)
		doc := loadFixture(t, fx)
		random, cdfs := 0, 0
		for _, tb := range Build(doc.Results).Tables {
			if tb.Access == "random" {
				random++
			}
			for _, row := range tb.Cells {
				if slices.ContainsFunc(row, func(c *Cell) bool { return c != nil && cellHistogram(*c.Result) != nil }) {
					cdfs++
				}
			}
		}
		// IOPS and p99 against queue depth, p99 against IOPS; a latency
		// distribution per row whose cells have histograms, none without.
		if n := bytes.Count(page, []byte("<svg")); n != 3*random+cdfs {
			t.Errorf("%s: %d charts, want 3 per random table (%d) and %d distributions", fx, n, 3*random, cdfs)
		}
		if n := bytes.Count(page, []byte("latency distribution</text>")); n != cdfs || fx == "hist" && cdfs != 8 {
			t.Errorf("%s: %d latency distributions drawn, %d rows with histograms", fx, n, cdfs)
		}
		// Chart text takes the page's sans-serif font.
		if fonts := regexp.MustCompile(`font-family:[^ ;"][^;"]*`).FindAllString(string(page), -1); len(fonts) == 0 ||
			slices.ContainsFunc(fonts, func(f string) bool { return f != "font-family:inherit" }) {
			t.Errorf("%s: chart fonts %q, want each to inherit the page's", fx, slices.Compact(fonts))
		}
		// The SVG namespace is a name, not a fetch; nothing else may point
		// outside the file.
		stripped := strings.ReplaceAll(string(page), `"http://www.w3.org/2000/svg"`, "")
		stripped = strings.ReplaceAll(stripped, `"http://www.w3.org/1999/xlink"`, "")
		if m := external.FindString(stripped); m != "" {
			t.Errorf("%s: external reference %q", fx, m)
		}
		if fx == "full-missing" && !strings.Contains(string(page), `class="cdm"`) {
			t.Error("CrystalDiskMark cells not highlighted")
		}
	}
}

// Headless Chromium, with no network, renders the page and its charts: the
// screenshot shows the chart lines' colours, which nothing else on the page
// uses.
func TestHTMLRendersInChromium(t *testing.T) {
	img := screenshot(t, renderHTML(t, "full-missing"))
	// plotutil's soft blue and purple: the lines of the 50 % and 0 % read
	// series. Tables use pale backgrounds and a darker blue outline.
	blue := countNear(img, 90, 155, 212)
	purple := countNear(img, 158, 103, 171)
	t.Logf("screenshot %v: %d blue and %d purple chart pixels", img.Bounds().Size(), blue, purple)
	if blue < 300 || purple < 300 {
		t.Errorf("charts did not render: %d blue, %d purple line pixels", blue, purple)
	}
}

// The p99-against-IOPS chart alone, drawn by Chromium: each read share's
// line is there in its colour.
func TestHockeyStickRendersInChromium(t *testing.T) {
	doc := loadFixture(t, "full-missing")
	iops, lat := BuildMetric(doc.Results, IOPS), BuildMetric(doc.Results, LatP99)
	svg, err := hockeyStickSVG(iops.Tables[0], lat.Tables[0])
	if err != nil {
		t.Fatal(err)
	}
	page := []byte(`<!DOCTYPE html><html><body style="font-family: sans-serif">` + string(svg) + `</body></html>`)
	img := screenshot(t, page)
	rows := iops.Tables[0].Rows
	for i, rgb := range [][3]int{{241, 90, 96}, {122, 195, 106}, {90, 155, 212}, {250, 167, 91}, {158, 103, 171}} {
		n := countNear(img, rgb[0], rgb[1], rgb[2])
		t.Logf("%s: %d line pixels", rows[i], n)
		if n < 150 {
			t.Errorf("%s: %d line pixels: its line is not drawn", rows[i], n)
		}
	}
}

// screenshot renders a page in headless Chromium, with no network, and
// returns the picture.
func screenshot(t *testing.T, html []byte) image.Image {
	t.Helper()
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	testenv.Require(t, browser != "", "no chromium on PATH (Debian package chromium)")
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-quic",
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", // no network at all
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1400,1400",
		"--screenshot=" + shot, "file://" + page}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	out, err := exec.Command(browser, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("IOMATRIX_KEEP_SCREENSHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		testenv.Must(t, os.WriteFile(keep+"-"+t.Name()+".png", data, 0o644))
	}
	return img
}

func countNear(img image.Image, r, g, b int) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			dr, dg, db := int(pr>>8)-r, int(pg>>8)-g, int(pb>>8)-b
			if dr*dr+dg*dg+db*db <= 12*12 {
				n++
			}
		}
	}
	return n
}

// The page header counts in agreement: "1 CPU", "1 result".
func TestHTMLCountsAgree(t *testing.T) {
	doc := loadFixture(t, "capped")
	doc.Results = doc.Results[:1]
	doc.Host.CPUs = 1
	page := string(render(t, writeHTML, doc, Options{}))
	for _, want := range []string{", 1 CPU;", "; 1 result</p>"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in the header:\n%.1500s", want, page[strings.Index(page, "<body>"):])
		}
	}
}

// Chromium draws a latency distribution from a results file's histograms:
// a line per queue depth, in the first two chart colours.
func TestHTMLDistributionRendersInChromium(t *testing.T) {
	doc := loadFixture(t, "hist")
	var table Table
	for _, tb := range Build(doc.Results).Tables {
		if tb.Access == results.Random {
			table = tb
			break
		}
	}
	svgs, err := cdfSVGs("4 KiB random", table)
	if err != nil || len(svgs) == 0 {
		t.Fatalf("%d charts: %v", len(svgs), err)
	}
	page := []byte(`<!DOCTYPE html><html><body style="font-family: sans-serif">` + string(svgs[0]) + `</body></html>`)
	img := screenshot(t, page)
	for i, rgb := range [][3]int{{241, 90, 96}, {122, 195, 106}} {
		n := countNear(img, rgb[0], rgb[1], rgb[2])
		t.Logf("%s: %d line pixels", table.Cols[i], n)
		if n < 150 {
			t.Errorf("%s: %d line pixels: its distribution is not drawn", table.Cols[i], n)
		}
	}
}
