package session

import (
	"context"
	"errors"
	"syscall"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// wireError is an error as it crosses the pipe from the capped child to
// its parent: its text, and everything callers test with errors.Is and
// errors.As — the sentinels it matches, its errno, the failed I/O (op,
// offset, errno) and the pattern field at fault. The parent rebuilds an
// error that answers those questions as the child's did, so a fault
// gives the same exit status and the same message capped or not.
type wireError struct {
	Message string              `json:"message"`
	Kinds   []string            `json:"kinds,omitempty"`
	Errno   int                 `json:"errno,omitempty"`
	IO      *results.IOError    `json:"io,omitempty"`
	Field   *pattern.FieldError `json:"field,omitempty"`
}

// wireKinds are the sentinels that travel by name. Order does not matter:
// every one an error matches is sent.
var wireKinds = map[string]error{
	"bad-target":   target.ErrBadTarget,
	"no-direct-io": target.ErrNoDirectIO,
	"no-space":     target.ErrNoSpace,
	"not-ours":     target.ErrNotOurs,
	"destructive":  target.ErrDestructive,
	"in-use":       target.ErrInUse,
	"no-parent":    target.ErrNoParent,
	"not-target":   target.ErrNotTarget,
	"bad-size":     units.ErrBadSize,
	"bad-pattern":  pattern.ErrBadPattern,
	"no-uring":     iotest.ErrNoUring,
	"bad-document": results.ErrBadDocument,
	"canceled":     context.Canceled,
	"deadline":     context.DeadlineExceeded,
}

// toWire describes err for the pipe; nil stays nil.
func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Message: err.Error()}
	for name, sentinel := range wireKinds {
		if errors.Is(err, sentinel) {
			w.Kinds = append(w.Kinds, name)
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		w.Errno = int(errno)
	}
	var ioErr *results.IOError
	if errors.As(err, &ioErr) {
		w.IO = ioErr
	}
	var fe *pattern.FieldError
	if errors.As(err, &fe) {
		w.Field = fe
	}
	return w
}

// err rebuilds the error on the parent's side; a nil wireError is no error.
func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	r := &remoteError{msg: w.Message}
	for _, k := range w.Kinds {
		if s, ok := wireKinds[k]; ok {
			r.wrapped = append(r.wrapped, s)
		}
	}
	if w.IO != nil {
		r.wrapped = append(r.wrapped, w.IO)
	}
	if w.Field != nil {
		r.wrapped = append(r.wrapped, w.Field)
	}
	if w.Errno != 0 {
		r.wrapped = append(r.wrapped, syscall.Errno(w.Errno))
	}
	return r
}

// remoteError is an error raised in the child: the child's message, and
// what it wrapped.
type remoteError struct {
	msg     string
	wrapped []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.wrapped }
