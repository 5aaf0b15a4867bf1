package main

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// A sweep's --compress and --dedupe reach every writing pattern, and a
// resumed sweep takes its file's content: from its settings, or from
// its cells when the file does not say.
func TestSweepContent(t *testing.T) {
	prof, err := profiles.Builtin("iocost")
	if err != nil {
		t.Fatal(err)
	}
	given := func(names ...string) func(string) bool {
		return func(n string) bool { return strings.Contains(strings.Join(names, ","), n) }
	}
	check := func(what string, setup *sweepSetup, compress, dedupe int) {
		t.Helper()
		for _, p := range setup.profile.Patterns {
			if want := map[bool][2]int{true: {compress, dedupe}}[p.Writes()]; [2]int{p.Compress, p.Dedupe} != want {
				t.Errorf("%s: %s carries compress %d dedupe %d", what, p.Name(), p.Compress, p.Dedupe)
			}
		}
		if setup.compress != compress || setup.dedupe != dedupe {
			t.Errorf("%s: settings %d, %d", what, setup.compress, setup.dedupe)
		}
	}
	fresh := &sweepSetup{profile: prof}
	if err := (&contentOptions{Compress: 40, Dedupe: 5}).apply(given("compress", "dedupe"), fresh); err != nil {
		t.Fatal(err)
	}
	check("fresh", fresh, 40, 5)
	if len(fresh.todo) != len(prof.Patterns) {
		t.Errorf("fresh: %d to do", len(fresh.todo))
	}

	doc := &results.Document{Settings: results.Settings{Compress: 40, Dedupe: 5}}
	resumed := &sweepSetup{profile: prof, doc: doc}
	if err := (&contentOptions{}).apply(given(), resumed); err != nil {
		t.Fatal(err)
	}
	check("resumed from settings", resumed, 40, 5)

	doc = &results.Document{}
	for _, p := range fresh.profile.Patterns[:4] {
		doc.Results = append(doc.Results, results.Result{Name: p.Name(), Pattern: p})
	}
	resumed = &sweepSetup{profile: prof, doc: doc}
	if err := (&contentOptions{}).apply(given(), resumed); err != nil {
		t.Fatal(err)
	}
	check("resumed from cells", resumed, 40, 5)
	if len(resumed.todo) != len(prof.Patterns)-4 {
		t.Errorf("resumed: %d to do, want %d", len(resumed.todo), len(prof.Patterns)-4)
	}

	err = (&contentOptions{Dedupe: 5}).apply(given("dedupe"), &sweepSetup{profile: prof, doc: doc})
	if err == nil || !strings.HasPrefix(err.Error(), "--dedupe: ") {
		t.Errorf("--dedupe on resuming: %v", err)
	}
	if err := (&contentOptions{Compress: 101}).apply(given("compress"), &sweepSetup{profile: prof}); err == nil || !strings.HasPrefix(err.Error(), "--compress: ") {
		t.Errorf("--compress 101: %v", err)
	}
}
