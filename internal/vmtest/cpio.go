package vmtest

import (
	"fmt"
	"io"
)

// cpioWriter writes a newc ("070701") cpio archive, the format the kernel
// unpacks as an initramfs: a header of hexadecimal fields, the name, the
// data, each padded to four bytes.
type cpioWriter struct {
	w   io.Writer
	ino int
	err error
}

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
)

func (c *cpioWriter) entry(name string, mode int, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *cpioWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) dir(name string)                      { c.entry(name, cpioDir|0o755, nil) }
func (c *cpioWriter) file(name string, b []byte, perm int) { c.entry(name, cpioFile|perm, b) }
func (c *cpioWriter) trailer()                             { c.entry("TRAILER!!!", 0, nil) }
