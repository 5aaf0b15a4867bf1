package pattern

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/results"
)

// The kinds of durable write (results.Pattern.Sync).
const (
	// SyncNone: writes nothing waits on to be durable (the default).
	SyncNone = "none"
	// SyncDsync: each write is durable when it completes (RWF_DSYNC, the
	// O_DSYNC of one write).
	SyncDsync = "dsync"
	// SyncFdatasync and SyncFsync: after every N-th write of a stream, a
	// sync of the file that the write waits for. N need not be whole: a
	// database's observed syncs are seldom a whole number of writes apart
	// (1.5: a sync after the 2nd and the 3rd of every three writes).
	SyncFdatasync = "fdatasync"
	SyncFsync     = "fsync"
	// SyncAfter, the third part of fdatasync:N:after and fsync:N:after:
	// the ring issues the sync once the write has completed, rather than
	// linked after it in the same submission.
	SyncAfter = "after"
)

// Sync is a parsed durable-write mode.
type Sync struct {
	// Kind is SyncNone, SyncDsync, SyncFdatasync or SyncFsync.
	Kind string
	// Every is N of fdatasync:N and fsync:N: a sync after every N-th
	// write, on average when N is not whole (a write is followed by one
	// once the writes since the last sync reach N, and N is taken from
	// them); 0 otherwise.
	Every float64
	// After (fdatasync:N:after, fsync:N:after): on a ring, the sync is
	// issued once its write has completed, as a database calls fdatasync
	// once its write has returned, and as fio issues it; otherwise it is
	// linked after the write and submitted with it. psync always calls
	// it after the write.
	After bool
}

// ParseSync reads a durable-write mode: none, dsync, fdatasync:N or
// fsync:N (N ≥ 1, whole or with up to two decimals; a bare fdatasync or
// fsync is N = 1), the last two
// optionally followed by :after. The error says what is wrong, without
// naming the field.
func ParseSync(s string) (Sync, error) {
	kind, n, hasN := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	n, when, hasWhen := strings.Cut(n, ":")
	if hasWhen && when != SyncAfter || hasWhen && kind != SyncFdatasync && kind != SyncFsync {
		return Sync{}, fmt.Errorf("%q is not one of none, dsync, fdatasync:N[:after], fsync:N[:after]", s)
	}
	switch kind {
	case "", SyncNone, SyncDsync:
		if hasN {
			return Sync{}, fmt.Errorf("%q: %s takes no count", s, kind)
		}
		if kind == "" {
			kind = SyncNone
		}
		return Sync{Kind: kind}, nil
	case "0":
		return Sync{Kind: SyncNone}, nil // fio's sync=0
	case "1", "sync":
		return Sync{}, fmt.Errorf("%q: fio's O_SYNC writes (sync=1, sync=sync) are not measured: use dsync (O_DSYNC) or fsync:1", s)
	case SyncFdatasync, SyncFsync:
		if !hasN {
			return Sync{Kind: kind, Every: 1}, nil
		}
		every, err := strconv.ParseFloat(n, 64)
		_, decimals, _ := strings.Cut(n, ".")
		if err != nil || !(every >= 1 && every <= maxSyncEvery) || len(decimals) > 2 || strings.Trim(n, "0123456789.") != "" {
			return Sync{}, fmt.Errorf("%q: N of %s:N must be a number of writes from 1 to %d, with at most two decimals (1.5: two syncs in three writes)", s, kind, maxSyncEvery)
		}
		return Sync{Kind: kind, Every: every, After: hasWhen}, nil
	}
	return Sync{}, fmt.Errorf("%q is not one of none, dsync, fdatasync:N[:after], fsync:N[:after]", s)
}

// SyncOf is a pattern's durable-write mode, parsed; a pattern Validate
// passed always parses.
func SyncOf(p results.Pattern) Sync {
	s, err := ParseSync(p.Sync)
	if err != nil {
		return Sync{Kind: SyncNone}
	}
	return s
}

// Canonical is the mode as a pattern keeps it: "" for none, "dsync",
// "fdatasync:N", "fsync:N", with ":after" when After.
func (s Sync) Canonical() string {
	switch s.Kind {
	case SyncNone, "":
		return ""
	case SyncDsync:
		return SyncDsync
	}
	c := s.Kind + ":" + strconv.FormatFloat(s.Every, 'f', -1, 64)
	if s.After {
		c += ":" + SyncAfter
	}
	return c
}

// OwnSyncs tells whether the mode issues syncs of its own (fdatasync:N,
// fsync:N), as opposed to flagging each write (dsync) or none.
func (s Sync) OwnSyncs() bool { return s.Every > 0 }

// Whole tells whether N is a whole number of writes (fio's fdatasync=N
// and fsync=N take no other).
func (s Sync) Whole() bool { return s.Every == math.Trunc(s.Every) }

// maxSyncEvery bounds N: a sync after more writes than this is no
// database's durable write.
const maxSyncEvery = 1 << 20

// WithSync is p with the durable-write mode s (ParseSync's syntax) in
// canonical form, unchecked against the rest of p (Validate).
func WithSync(p results.Pattern, s string) (results.Pattern, error) {
	parsed, err := ParseSync(s)
	if err != nil {
		return p, Fieldf("sync", "%s", err.Error())
	}
	p.Sync = parsed.Canonical()
	return p, nil
}

// validateSync checks a pattern's durable-write mode: it parses, is in
// canonical form, the pattern writes, and a sync of its own follows a
// stream's one write in flight at a time.
func validateSync(p results.Pattern) error {
	if p.Sync == "" {
		return nil
	}
	s, err := ParseSync(p.Sync)
	if err != nil {
		return Fieldf("sync", "%s", err.Error())
	}
	if c := s.Canonical(); c != p.Sync {
		return Fieldf("sync", "%q is not in canonical form %q", p.Sync, c)
	}
	if !p.Writes() {
		return Fieldf("sync", "%s makes writes durable: the pattern only reads", s.Canonical())
	}
	if s.OwnSyncs() && p.QueueDepth > 1 {
		return Mention("sync", func(n fault.Namer) string {
			return fmt.Sprintf("%s needs %s 1: a sync waits for the write it follows, and a stream with more in flight would sync "+
				"writes it has not finished (use dsync, or more jobs)", s.Canonical(), n("queue_depth"))
		})
	}
	return nil
}
