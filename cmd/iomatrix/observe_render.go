package main

import (
	"fmt"

	"github.com/iomatrix/iomatrix/results"
)

// renderObservation prints the observation's summary on stdout.
func renderObservation(g *globalOptions, doc *results.Observation) error {
	for _, d := range doc.Devices {
		if d.Summary == nil {
			continue
		}
		m := d.Summary.Mean
		fmt.Fprintf(g.stdout, "device %s: %.1f r/s %.1f w/s\n", d.Name, m["reads"], m["writes"])
	}
	for _, s := range doc.Systems {
		if s.IO != nil && s.IO.Summary != nil {
			m := s.IO.Summary.Mean
			fmt.Fprintf(g.stdout, "system %s: %.1f r/s %.1f w/s\n", s.Name, m["reads"], m["writes"])
		}
	}
	return nil
}
