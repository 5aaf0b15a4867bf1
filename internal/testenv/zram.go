package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ZRAM is a zram device of the test's own, added for it and removed when
// it ends: storage that compresses what it holds, in memory.
type ZRAM struct {
	Dev string // /dev/zramN
	sys string // /sys/block/zramN
	n   string
}

const zramControl = "/sys/class/zram-control"

// NewZRAM adds a zram device (loading the module if need be) and sizes
// it to size bytes. It needs root.
func NewZRAM(t testing.TB, size int64) *ZRAM {
	t.Helper()
	Root(t)
	if _, err := os.Stat(zramControl); err != nil {
		out, err := exec.Command("modprobe", "zram", "num_devices=0").CombinedOutput()
		Require(t, err == nil, "no zram: modprobe zram: "+strings.TrimSpace(string(out)))
	}
	b, err := os.ReadFile(filepath.Join(zramControl, "hot_add"))
	Require(t, err == nil, fmt.Sprintf("cannot add a zram device: %v", err))
	z := &ZRAM{n: strings.TrimSpace(string(b))}
	z.Dev, z.sys = "/dev/zram"+z.n, "/sys/block/zram"+z.n
	t.Cleanup(func() {
		if err := z.reset(); err == nil {
			_ = os.WriteFile(filepath.Join(zramControl, "hot_remove"), []byte(z.n), 0)
		}
	})
	z.Reset(t, size)
	return z
}

// Reset empties the device and sizes it to size bytes again.
func (z *ZRAM) Reset(t testing.TB, size int64) {
	t.Helper()
	Must(t, z.reset())
	Must(t, os.WriteFile(filepath.Join(z.sys, "disksize"), []byte(strconv.FormatInt(size, 10)), 0))
}

// reset empties the device; udev may still hold it open for a moment
// after a writer closed it (the kernel then answers EBUSY).
func (z *ZRAM) reset() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	Poll(ctx, func() bool {
		err = os.WriteFile(filepath.Join(z.sys, "reset"), []byte("1"), 0)
		return err == nil
	})
	return err
}

// MMStat is what zram holds: the first fields of its mm_stat.
type MMStat struct {
	OrigDataSize, ComprDataSize, MemUsedTotal int64
	SamePages, HugePages                      int64
}

// MMStat reads the device's mm_stat.
func (z *ZRAM) MMStat(t testing.TB) MMStat {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(z.sys, "mm_stat"))
	Must(t, err)
	f := strings.Fields(string(b))
	if len(f) < 8 {
		Must(t, errors.New("mm_stat: "+string(b)))
	}
	n := func(i int) int64 {
		v, err := strconv.ParseInt(f[i], 10, 64)
		Must(t, err)
		return v
	}
	return MMStat{OrigDataSize: n(0), ComprDataSize: n(1), MemUsedTotal: n(2), SamePages: n(5), HugePages: n(7)}
}
