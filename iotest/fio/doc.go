// Package fio holds fio, the yardstick, in iomatrix's terms: its JSON
// output (--output-format=json or json+) read into iomatrix results
// documents and written out for iomatrix import (Convert), and its engine
// names as iomatrix's (Engine). An input adapter, with its own fixtures
// (captured from real fio runs) and fuzzer: jobs it cannot map faithfully
// are reported as problems, never guessed.
package fio
