package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps: a range of the address space and
// what backs it.
type Mapping struct {
	Start, End uint64 // [Start, End)
	Perms      string // "r-xp": read, write, execute, private or shared
	Offset     uint64
	Dev        DevNum // device of the backing file; 0:0 for anonymous memory
	Inode      uint64
	Path       string // file, "[heap]", "[stack]", "" for anonymous memory
}

// FileBacked tells whether the mapping's pages come from a file, so that
// touching one for the first time may read it from a device.
func (m Mapping) FileBacked() bool {
	return m.Inode != 0 && strings.HasPrefix(m.Path, "/")
}

// ParseMaps parses the format of /proc/PID/maps (proc(5)): address range,
// permissions, offset, device (hexadecimal major:minor), inode and an
// optional path, which may hold spaces and end in " (deleted)".
func ParseMaps(r io.Reader) ([]Mapping, error) {
	return parseLines(r, "maps", parseMapsLine)
}

func parseMapsLine(line string) (Mapping, error) {
	var fields [5]string
	rest := line
	for i := range fields {
		rest = strings.TrimLeft(rest, " \t")
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		fields[i], rest = rest[:end], rest[end:]
		if fields[i] == "" {
			return Mapping{}, fmt.Errorf("%d fields, want at least 5", i)
		}
	}
	var m Mapping
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return Mapping{}, fmt.Errorf("address range %q without '-'", fields[0])
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("start address %q: %w", lo, err)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("end address %q: %w", hi, err)
	}
	if m.End < m.Start {
		return Mapping{}, fmt.Errorf("address range %q ends before it starts", fields[0])
	}
	if len(fields[1]) != 4 {
		return Mapping{}, fmt.Errorf("permissions %q, want 4 letters", fields[1])
	}
	m.Perms = fields[1]
	if m.Offset, err = strconv.ParseUint(fields[2], 16, 64); err != nil {
		return Mapping{}, fmt.Errorf("offset %q: %w", fields[2], err)
	}
	maj, min, ok := strings.Cut(fields[3], ":")
	if !ok {
		return Mapping{}, fmt.Errorf("device %q without ':'", fields[3])
	}
	ma, err1 := strconv.ParseUint(maj, 16, 32)
	mi, err2 := strconv.ParseUint(min, 16, 32)
	if err := errors.Join(err1, err2); err != nil {
		return Mapping{}, fmt.Errorf("device %q: %w", fields[3], err)
	}
	m.Dev = DevNum{uint32(ma), uint32(mi)}
	if m.Inode, err = strconv.ParseUint(fields[4], 10, 64); err != nil {
		return Mapping{}, fmt.Errorf("inode %q: %w", fields[4], err)
	}
	m.Path = strings.TrimLeft(rest, " \t")
	return m, nil
}

// SelfMaps returns the mappings of the calling process.
func (fs FS) SelfMaps() ([]Mapping, error) {
	return parseFile(filepath.Join(fs.proc, "self", "maps"), ParseMaps)
}

// SelfAnonHuge is how many bytes of the calling process's mapping that
// starts at address start are backed by transparent huge pages (the
// AnonHugePages of /proc/self/smaps). The file is read whole, as bytes:
// it is long, and only one mapping's block is wanted.
func (fs FS) SelfAnonHuge(start uint64) (int, error) {
	path := filepath.Join(fs.proc, "self", "smaps")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := ParseSmapsAnonHuge(data, start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// ParseSmapsAnonHuge finds, in the content of /proc/PID/smaps (proc(5)),
// the block of the mapping that starts at address start, and returns its
// AnonHugePages (a line every mapping's block has) in bytes.
func ParseSmapsAnonHuge(data []byte, start uint64) (int, error) {
	head := fmt.Appendf(nil, "%x-", start)
	i := bytes.Index(data, append([]byte{'\n'}, head...)) + 1
	if !bytes.HasPrefix(data, head) && i == 0 {
		return 0, fmt.Errorf("no mapping starts at %#x", start)
	}
	_, v, found := bytes.Cut(data[i:], []byte("\nAnonHugePages:"))
	v, _, _ = bytes.Cut(v, []byte("\n"))
	kb, err := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimSuffix(v, []byte("kB")))))
	if !found || err != nil {
		return 0, fmt.Errorf("the mapping at %#x has no AnonHugePages figure", start)
	}
	return kb << 10, nil
}
