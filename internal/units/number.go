package units

import "strconv"

// Thousands formats v with comma separators and the given decimals.
func Thousands(v float64, decimals int) string {
	return string(AppendThousands(nil, v, decimals))
}

// AppendThousands appends v with the given decimals and a comma between
// groups of three digits ("1,234,567.8"), allocating nothing beyond b:
// a live progress line redraws with it many times a second.
func AppendThousands(b []byte, v float64, decimals int) []byte {
	var scratch [64]byte
	s := strconv.AppendFloat(scratch[:0], v, 'f', decimals, 64)
	if len(s) > 0 && s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	intLen := len(s)
	for i, c := range s {
		if c == '.' {
			intLen = i
			break
		}
	}
	for i := 0; i < intLen; i++ {
		if i > 0 && (intLen-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return append(b, s[intLen:]...)
}

// Count renders "1 pattern", "2 patterns": a number and a regular noun
// that agrees with it.
func Count[N int | uint64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Thousands(float64(n), 0) + " " + noun + "s"
}
