package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// perCPU is the name blktrace gives each CPU's file: DEVICE.blktrace.CPU.
var perCPU = regexp.MustCompile(`^(.+\.blktrace)\.([0-9]+)$`)

// Files are the files of the trace path names: the path itself, or, for
// one of blktrace's per-CPU files, every CPU's file of the same trace
// (DEVICE.blktrace.0, .1, …), in CPU order.
func Files(path string) ([]string, error) {
	m := perCPU.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return []string{path}, nil
	}
	dir := filepath.Dir(path)
	all, err := filepath.Glob(filepath.Join(dir, regexp.QuoteMeta(m[1])+".*"))
	if err != nil {
		return nil, err
	}
	byCPU := map[int]string{}
	for _, p := range all {
		if c := perCPU.FindStringSubmatch(filepath.Base(p)); c != nil && c[1] == m[1] {
			n, err := strconv.Atoi(c[2])
			if err == nil {
				byCPU[n] = p
			}
		}
	}
	var files []string
	for n := 0; len(files) < len(byCPU); n++ {
		if p, ok := byCPU[n]; ok {
			files = append(files, p)
		} else if n > 1<<16 {
			break
		}
	}
	return files, nil
}

// ReadFile reads the trace path names (see Files), of any format. Bad
// input is a fault.InputError naming the file and its line or record,
// or the device option.
func ReadFile(path string, o Options) (*Trace, error) {
	files, err := Files(path)
	if err != nil {
		return nil, fault.Input("", "%s: %w", path, err)
	}
	var rs []io.Reader
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fault.AsInput(err)
		}
		defer f.Close()
		rs = append(rs, f)
	}
	var t *Trace
	if len(rs) == 1 {
		t, err = Read(rs[0], o)
	} else {
		t, err = ReadBlktrace(rs, o)
	}
	if err != nil {
		return nil, fileError(path, files, err)
	}
	return t, nil
}

// fileError words a reader's error with the file at fault.
func fileError(path string, files []string, err error) error {
	var e *Error
	var many *DevicesError
	var none *NoDeviceError
	switch {
	case errors.As(err, &e) && e.Line > 0:
		return fault.Input("", "%s:%d: %w", path, e.Line, e.Err)
	case errors.As(err, &e):
		file := path
		if e.Part < len(files) {
			file = files[e.Part]
		}
		return fault.Input("", "%s: %w", file, err)
	case errors.As(err, &many):
		return fault.Mentions("device", func(n fault.Namer) string {
			return fmt.Sprintf("%s %v: name one with %s", path, many, n("device"))
		})
	case errors.As(err, &none):
		return fault.Input("device", "%s %w", path, err)
	}
	return fault.Input("", "%s: %w", path, err)
}
