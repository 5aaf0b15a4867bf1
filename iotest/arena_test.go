package iotest

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// An arena of buffers larger than a page lies on small pages that are
// physically contiguous 512 at a time (one split huge page each), none of
// them part of a huge page any more, and holds the random fill it was
// given. Reading physical frame numbers and page flags needs root.
func TestArenaContiguous(t *testing.T) {
	testenv.Root(t)
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	testenv.Require(t, strings.Contains(string(thp), "[always]") || strings.Contains(string(thp), "[madvise]"),
		"transparent huge pages are off: the arena gets scattered pages")
	const n, bs = 16, 1 << 20
	a, err := newArena(host, n, bs, rand.NewPCG(7, 8), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	if !a.contiguous {
		t.Fatal("the arena is not contiguous")
	}
	// Buffers that will not be registered never are.
	plain, err := newArena(host, n, bs, rand.NewPCG(7, 8), false)
	if err != nil {
		t.Fatal(err)
	}
	plain.free()
	if plain.contiguous {
		t.Error("an arena asked to be scattered is contiguous")
	}
	if h := hugeBytes(host, a.mem); h != 0 {
		t.Fatalf("%d bytes of the arena still on huge pages", h)
	}
	want := make([]byte, n*bs)
	fillRandom(want, rand.NewPCG(7, 8))
	if !bytes.Equal(a.mem, want) {
		t.Fatal("the arena does not hold its random fill")
	}

	pages := len(a.mem) / pageSize
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer pagemap.Close()
	flags, err := os.Open("/proc/kpageflags")
	if err != nil {
		t.Fatal(err)
	}
	defer flags.Close()
	entries := make([]byte, pages*8)
	if _, err := pagemap.ReadAt(entries, int64(uintptr(unsafe.Pointer(&a.mem[0]))/pageSize*8)); err != nil {
		t.Fatal(err)
	}
	const (
		present      = 1 << 63
		pfnMask      = 1<<55 - 1
		compoundHead = 1 << 15
		compoundTail = 1 << 16
		thpFlag      = 1 << 22
	)
	runs, large := 0, 0
	var prev uint64
	for i := range pages {
		e := binary.LittleEndian.Uint64(entries[i*8:])
		if e&present == 0 || e&pfnMask == 0 {
			t.Fatalf("page %d: pagemap entry %#x (not present, or no frame number shown)", i, e)
		}
		pfn := e & pfnMask
		if i == 0 || pfn != prev+1 {
			runs++
		}
		prev = pfn
		var f [8]byte
		if _, err := flags.ReadAt(f[:], int64(pfn*8)); err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint64(f[:])&(compoundHead|compoundTail|thpFlag) != 0 {
			large++
		}
	}
	if large != 0 {
		t.Errorf("%d of %d pages are part of a huge or compound page", large, pages)
	}
	if stretches := len(a.mem) / hugeSize; runs > stretches {
		t.Errorf("%d runs of contiguous pages in %d pages, want at most %d (one per 2 MiB)", runs, pages, stretches)
	}
}

// hugeBytes finds a mapping by its first byte, and nothing elsewhere.
func TestHugeBytes(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(mem) }()
	// Its own mapping, whatever lies beside it.
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	mem[0] = 1
	if h := hugeBytes(host, mem); h != 0 {
		t.Errorf("small pages: hugeBytes %d, want 0", h)
	}
	if h := hugeBytes(host, mem[pageSize:]); h != -1 {
		t.Errorf("not a mapping's start: hugeBytes %d, want -1", h)
	}
}

// The results say how the buffers lay: contiguous only when every job's
// were, nothing for buffers of one page.
func TestBuffersLayout(t *testing.T) {
	big, small := 1<<20, pageSize
	for _, c := range []struct {
		name   string
		arenas []*arena
		want   string
	}{
		{"all contiguous", []*arena{{stride: big, contiguous: true}, {stride: big, contiguous: true}}, "contiguous"},
		{"one scattered", []*arena{{stride: big, contiguous: true}, {stride: big}}, "scattered"},
		{"one page", []*arena{{stride: small}}, ""},
		{"no jobs", nil, ""},
	} {
		if got := (&run{arenas: c.arenas}).buffers(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
