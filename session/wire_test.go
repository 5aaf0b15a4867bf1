package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// An error that crosses the pipe from the capped child answers errors.Is
// and errors.As as the child's did: same message, the same sentinels,
// errno and field (what the exit status is decided on), same I/O error
// details.
func TestWireErrorRoundTrip(t *testing.T) {
	ioErr := &results.IOError{Op: "write", Offset: 1 << 20, Errno: int(syscall.ENOSPC), Msg: "no space left on device"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"I/O error", fmt.Errorf("rand-4k-r0-qd4 on /dev/loop3: %w", ioErr)},
		{"short read", fmt.Errorf("x: %w", &results.IOError{Op: "read", Offset: 4096, Msg: "short read: 0 of 4096 bytes"})},
		{"target not laid out", fmt.Errorf("/tmp/x.dat: %w", target.ErrNotOurs)},
		{"field", fmt.Errorf("pattern: %w", &pattern.FieldError{Field: "queue_depth", Msg: "300 is outside 1..256"})},
		{"permission", &os.PathError{Op: "open", Path: "/dev/sdz", Err: syscall.EACCES}},
		{"no io_uring", fmt.Errorf("%w: io_uring_setup: %w", iotest.ErrNoUring, syscall.ENOSYS)},
		{"interrupted", context.Canceled},
		{"plain", errors.New("child: something odd")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(childReply{Err: toWire(tc.err)})
			if err != nil {
				t.Fatal(err)
			}
			var back childReply
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			got := back.Err.err()
			if got.Error() != tc.err.Error() {
				t.Errorf("message %q, want %q", got.Error(), tc.err.Error())
			}
			for name, sentinel := range wireKinds {
				if errors.Is(got, sentinel) != errors.Is(tc.err, sentinel) {
					t.Errorf("errors.Is(%s) = %v, want %v", name, errors.Is(got, sentinel), errors.Is(tc.err, sentinel))
				}
			}
			var e1, e2 syscall.Errno
			if errors.As(got, &e1) != errors.As(tc.err, &e2) || e1 != e2 {
				t.Errorf("errno %v, want %v", e1, e2)
			}
			var io1, io2 *results.IOError
			if errors.As(got, &io1) != errors.As(tc.err, &io2) || (io1 != nil && *io1 != *io2) {
				t.Errorf("I/O error %+v, want %+v", io1, io2)
			}
			var f1, f2 *pattern.FieldError
			if errors.As(got, &f1) != errors.As(tc.err, &f2) || (f1 != nil && *f1 != *f2) {
				t.Errorf("field error %+v, want %+v", f1, f2)
			}
		})
	}
	if (*wireError)(nil).err() != nil || toWire(nil) != nil {
		t.Error("no error must stay no error")
	}
}
