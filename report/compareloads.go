package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/olekukonko/tablewriter/renderer"

	"github.com/iomatrix/iomatrix/internal/units"
)

// LoadDelta is one load of a load–latency curve measured in both runs:
// the same shape and arrivals, at the same share of each run's own
// closed-loop maximum (a sweep --rates of shares offers each run other
// IOPS), or at the same offered IOPS where a run has no maximum.
type LoadDelta struct {
	Curve string `json:"curve"` // the shape and arrivals (Curve.Title)
	// SharePct is the load's share of the maximum in percent, rounded to
	// a tenth; 0 when the loads were matched on their offered IOPS.
	SharePct    float64 `json:"share_pct,omitempty"`
	BaseName    string  `json:"base_name"`
	NewName     string  `json:"new_name"`
	BaseOffered float64 `json:"base_offered_iops"`
	NewOffered  float64 `json:"new_offered_iops"`
	// BaseP99US and NewP99US are p99 response time in µs (service time
	// where a result recorded none: Service says so).
	BaseP99US     float64 `json:"base_p99_response_us"`
	NewP99US      float64 `json:"new_p99_response_us"`
	Ratio         float64 `json:"ratio"` // new / base p99; 0 when base is 0
	BaseSustained bool    `json:"base_sustained"`
	NewSustained  bool    `json:"new_sustained"`
	Service       bool    `json:"service_time,omitempty"`
}

// matchLoads pairs the two runs' open-loop results, curve by curve, and
// returns the pairs, ordered by curve then load ([] for none), and the
// names it paired.
func matchLoads(base, cur []Curve) (loads []LoadDelta, paired map[string]bool) {
	loads, paired = []LoadDelta{}, map[string]bool{}
	for _, nc := range cur {
		i := slices.IndexFunc(base, func(b Curve) bool { return b.Shape == nc.Shape && b.Arrival == nc.Arrival })
		if i < 0 {
			continue
		}
		bc := base[i]
		byShare := bc.Max != nil && nc.Max != nil && bc.Max.Total.IOPS > 0 && nc.Max.Total.IOPS > 0
		key := func(c Curve, p CurvePoint) float64 {
			if byShare {
				return math.Round(1000*p.Offered/c.Max.Total.IOPS) / 10
			}
			return p.Offered
		}
		for _, np := range nc.Points {
			j := slices.IndexFunc(bc.Points, func(bp CurvePoint) bool { return key(bc, bp) == key(nc, np) })
			if j < 0 {
				continue
			}
			bp := bc.Points[j]
			d := LoadDelta{Curve: nc.Title(), BaseName: bp.Result.Name, NewName: np.Result.Name,
				BaseOffered: bp.Offered, NewOffered: np.Offered, BaseP99US: bp.P99, NewP99US: np.P99,
				BaseSustained: bp.Sustained, NewSustained: np.Sustained, Service: bp.Service || np.Service}
			if byShare {
				d.SharePct = key(nc, np)
			}
			if d.BaseP99US > 0 {
				d.Ratio = d.NewP99US / d.BaseP99US
			}
			loads = append(loads, d)
			paired[d.BaseName], paired[d.NewName] = true, true
		}
	}
	slices.SortStableFunc(loads, func(a, b LoadDelta) int {
		return cmp.Or(cmp.Compare(a.Curve, b.Curve), cmp.Compare(a.SharePct, b.SharePct), cmp.Compare(a.NewOffered, b.NewOffered))
	})
	return loads, paired
}

// writeLoads renders the paired loads, a table per curve: each load's
// p99 response time in both runs and its change, and whether each run
// sustained it.
func writeLoads(w io.Writer, loads []LoadDelta, md bool) error {
	var curves []string
	for _, d := range loads {
		if !slices.Contains(curves, d.Curve) {
			curves = append(curves, d.Curve)
		}
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	for _, title := range curves {
		heading := "load–latency " + title + ": p99 response time"
		if md {
			fmt.Fprintf(w, "\n### %s\n\n", heading)
		} else {
			fmt.Fprintf(w, "\n%s\n", heading)
		}
		header := []string{"load", "offered base", "offered new", "p99 base (µs)", "p99 new (µs)", "change", "sustained base", "sustained new"}
		var rows [][]string
		service := false
		for _, d := range loads {
			if d.Curve != title {
				continue
			}
			load := units.Thousands(d.NewOffered, 0) + " IOPS"
			if d.SharePct > 0 {
				load = units.FormatPercent(d.SharePct) + " of max"
			}
			change := "-"
			if d.Ratio > 0 {
				change = fmt.Sprintf("%+.1f %%", (d.Ratio-1)*100)
			}
			mark := serviceMark(d.Service)
			service = service || d.Service
			rows = append(rows, []string{load, units.Thousands(d.BaseOffered, 0), units.Thousands(d.NewOffered, 0),
				units.Thousands(d.BaseP99US, 0) + mark, units.Thousands(d.NewP99US, 0) + mark, change,
				yes(d.BaseSustained), yes(d.NewSustained)})
		}
		rend := asciiTable()
		if md {
			rend = renderer.NewMarkdown()
		}
		if err := renderRows(w, header, rows, rend); err != nil {
			return err
		}
		if service {
			fmt.Fprintln(w, ServiceNote)
		}
	}
	return nil
}
