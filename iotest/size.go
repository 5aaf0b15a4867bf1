package iotest

import "github.com/iomatrix/iomatrix/internal/units"

// ErrBadSize is returned for strings that are not sizes.
var ErrBadSize = units.ErrBadSize

// ParseSize parses sizes such as "4096", "4k", "16KiB", "1m", "16GiB" and
// "1.5g" as powers of two. The result must be a whole number of bytes.
func ParseSize(s string) (int64, error) { return units.ParseSize(s) }

// FormatSize renders n bytes compactly with binary units ("4KiB", "1.5GiB").
func FormatSize(n int64) string { return units.FormatSize(n) }

// ShortSize renders block sizes the way pattern names use them: 4k, 16k, 1m.
func ShortSize(n int64) string { return units.ShortSize(n) }
