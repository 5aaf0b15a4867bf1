package main

import (
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/results"
)

// contentOptions are sweep's --compress and --dedupe: the data content
// of every writing pattern of the profile.
type contentOptions struct {
	Compress, Dedupe int
}

func (o *contentOptions) AddFlags(f *pflag.FlagSet) {
	f.IntVar(&o.Compress, "compress", 0, "every write's data compresses by this percentage (0-100), as fio's buffer_compress_percentage (see run --help)")
	f.IntVar(&o.Dedupe, "dedupe", 0, "this percentage of writes (0-100) repeat an earlier write's data, as fio's dedupe_percentage")
}

// apply gives the profile's writing patterns the content asked for; a
// resumed sweep keeps its file's, which it finds in the file's cells.
func (o *contentOptions) apply(given func(string) bool, setup *sweepSetup) error {
	asked := given("compress") || given("dedupe")
	if asked && setup.doc != nil {
		flag := "--compress"
		if !given("compress") {
			flag = "--dedupe"
		}
		return usagef("%s: a resumed sweep writes the data its file's cells wrote; resume without it", flag)
	}
	compress, dedupe := o.Compress, o.Dedupe
	if !asked {
		if setup.doc == nil {
			return nil
		}
		var ok bool
		if compress, dedupe, ok = fileContent(setup.doc); !ok {
			return nil
		}
	}
	setup.compress, setup.dedupe = compress, dedupe
	p, err := setup.profile.WithContent(compress, dedupe)
	if err != nil {
		return flagError(err)
	}
	setup.profile = p
	setup.todo = setup.doc.Remaining(p.Patterns)
	if r := setup.rates; r != nil && asked && r.Shape.Writes() {
		r.Shape.Compress, r.Shape.Dedupe = compress, dedupe // checked with the profile's
	}
	return nil
}

// fileContent is the content a sweep's flags gave a results file, or,
// in a file that does not say (written before it could), the one
// content other than random, unique data that every writing cell
// carries, if they all carry one.
func fileContent(d *results.Document) (compress, dedupe int, ok bool) {
	if s := d.Settings; s.Compress > 0 || s.Dedupe > 0 {
		return s.Compress, s.Dedupe, true
	}
	for _, r := range d.Results {
		if !r.Pattern.Writes() {
			continue
		}
		if ok && (r.Pattern.Compress != compress || r.Pattern.Dedupe != dedupe) {
			return 0, 0, false
		}
		compress, dedupe, ok = r.Pattern.Compress, r.Pattern.Dedupe, true
	}
	return compress, dedupe, ok && (compress > 0 || dedupe > 0)
}
