package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePressure(t *testing.T) {
	tests := []struct {
		name, in string
		want     Pressure
		err      string
	}{
		{
			name: "io, both lines",
			in: "some avg10=35.47 avg60=29.33 avg300=31.36 total=8292838390\n" +
				"full avg10=21.46 avg60=17.49 avg300=20.89 total=5265093041\n",
			want: Pressure{
				Some:    PressureLine{Avg10: 35.47, Avg60: 29.33, Avg300: 31.36, TotalUS: 8292838390},
				Full:    PressureLine{Avg10: 21.46, Avg60: 17.49, Avg300: 20.89, TotalUS: 5265093041},
				HasFull: true,
			},
		},
		{
			// The host's cpu file before Linux 5.13: no full line.
			name: "some alone",
			in:   "some avg10=0.12 avg60=0.05 avg300=0.01 total=12004643716\n",
			want: Pressure{Some: PressureLine{Avg10: 0.12, Avg60: 0.05, Avg300: 0.01, TotalUS: 12004643716}},
		},
		{
			// A cgroup just made: all zero, and a key a later kernel
			// might add is ignored.
			name: "zero, an unknown key",
			in:   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 avg900=0.00 total=0\n\n",
			want: Pressure{HasFull: true},
		},
		{name: "empty", in: "", err: "no some line"},
		{name: "full alone", in: "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", err: "no some line"},
		{name: "no total", in: "some avg10=0.00 avg60=0.00 avg300=0.00\n", err: "line 1: no total"},
		{name: "bad total", in: "some avg10=0.00 total=-3\n", err: "line 1: total"},
		{name: "bad average", in: "some avg10=x total=3\n", err: "line 1: avg10"},
		{name: "no value", in: "some avg10 total=3\n", err: "want key=value"},
		{name: "another kind", in: "some total=1\nhalf total=2\n", err: `line 2: "half" is neither some nor full`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePressure(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// A pressure file the kernel does not keep is ErrNoPressure, its cause
// still reachable; one it keeps but that does not parse names the file.
func TestReadPressure(t *testing.T) {
	proc := t.TempDir()
	fs := NewFS(t.TempDir(), proc)
	_, err := fs.IOPressure()
	if !errors.Is(err, ErrNoPressure) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no /proc/pressure/io: %v, want ErrNoPressure and os.ErrNotExist", err)
	}
	file := filepath.Join(proc, "pressure", "io")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("some avg10=1.00 avg60=0.50 avg300=0.10 total=1500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=700\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := fs.IOPressure()
	if err != nil || p.Some.TotalUS != 1500 || p.Full.TotalUS != 700 || !p.HasFull {
		t.Errorf("read %+v, %v", p, err)
	}
	if err := os.WriteFile(file, []byte("some total=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.IOPressure(); err == nil || errors.Is(err, ErrNoPressure) || !strings.Contains(err.Error(), file) {
		t.Errorf("a file that does not parse: %v, want an error naming %s, not ErrNoPressure", err, file)
	}
}
