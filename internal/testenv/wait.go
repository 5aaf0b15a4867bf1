package testenv

import (
	"context"
	"testing"
	"time"
)

// A test waits for what it checks, never for a guessed time: a machine
// loaded by the rest of the suite, or by a user's fio, takes longer than
// any guess. These helpers poll a condition until it holds, with a
// deadline that turns a condition that never comes into a failure, not
// a hung test.

// Poll calls cond until it returns true, sleeping between calls (5 ms at
// first, doubling to at most 100 ms, so that a quick condition is seen
// at once and a costly one is not called in a tight loop). It returns
// false when ctx ends first.
func Poll(ctx context.Context, cond func() bool) bool {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		if cond() {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return cond()
		case <-t.C:
		}
	}
}

// WaitFor polls cond (see Poll) until it returns nil, and fails the test
// when it has not within timeout, naming what it waited for and cond's
// last error.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	if !Poll(ctx, func() bool { err = cond(); return err == nil }) {
		t.Fatalf("%s: not after %v: %v", what, timeout, err)
	}
}

// Until is WaitFor for a condition that has nothing to say while it does
// not hold.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !Poll(ctx, cond) {
		t.Fatalf("%s: not after %v", what, timeout)
	}
}
