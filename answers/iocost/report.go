package iocost

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// FromFiles derives the model from results files of one device (Derive)
// and checks it against all their cells (CheckModel). A file that holds
// no results, files of several devices, or too few cells to derive from
// are bad input.
func FromFiles(paths []string) (Report, error) {
	docs := make([]*results.Document, len(paths))
	for i, p := range paths {
		d, err := results.ReadResultsFile(p)
		if err != nil {
			return Report{}, fault.AsInput(err)
		}
		if i > 0 && d.Target.Device != docs[0].Target.Device {
			return Report{}, fault.Input("", "%s: measured %s, not %s as %s: one model is one device's", p, d.Target.Device, docs[0].Target.Device, paths[0])
		}
		docs[i] = d
	}
	d, err := Derive(docs)
	if errors.Is(err, ErrCannotDerive) {
		return Report{}, fault.AsInput(fmt.Errorf("%s: %w (%w)", paths[0], err, fault.NewMention(func(n fault.Namer) string {
			return "the iocost profile measures every cell the model needs: iomatrix sweep TARGET " + n("profile") + " iocost"
		})))
	}
	if err != nil {
		return Report{}, err
	}
	t := docs[0].Target
	span := docs[0].Settings.SizeBytes
	if span == 0 {
		span = t.SizeBytes
	}
	ch := CheckModel(d.Model, Cells(docs), span, t.MaxSectorsKB*1024)
	return NewReport(d, ch), nil
}

// PredictedPage is the check as report's HTML chart shows it: predicted
// against measured IOPS, cell by cell.
func (r Report) PredictedPage() report.PredictedPage {
	pg := report.PredictedPage{Title: "iocost model of " + r.Derived.Device, Lines: []string{r.ModelLine}}
	if r.QoSLine != "" {
		pg.Lines = append(pg.Lines, r.QoSLine)
	}
	for _, c := range r.Check.Cells {
		pg.Points = append(pg.Points, report.Predicted{Cell: c.Name, Predicted: c.Predicted, Measured: c.Measured, Judged: c.Judged})
	}
	pg.Notes = append(pg.Notes, fmt.Sprintf("honest vrate: %.2f %%", r.Check.HonestVratePct))
	pg.Notes = append(append(pg.Notes, r.Derived.Notes...), r.Check.Notes...)
	return pg
}

// Vrate is how the QoS's vrate bounds are set: at face value (the
// derivation's, rd-agent's min=60 max=100), scaled by the honest vrate of
// the model's check, or to Min–Max (percent).
type Vrate struct {
	Honest   bool
	Min, Max float64 // both 0: face value or honest
}

// ParseVrate reads face, honest, or MIN-MAX in percent, 1–10000 with
// MIN ≤ MAX, as io.cost.qos takes them; its errors are bad input of the
// option "vrate".
func ParseVrate(s string) (Vrate, error) {
	switch s {
	case "face":
		return Vrate{}, nil
	case "honest":
		return Vrate{Honest: true}, nil
	}
	// Each bound a plain decimal number of percent: what ParseFloat
	// would also read as NaN, an infinity, hex or 1e2 is refused.
	a, b, ok := strings.Cut(s, "-")
	var lo, hi float64
	var err error
	if ok {
		if lo, err = units.ParsePercent(a); err == nil {
			hi, err = units.ParsePercent(b)
		}
	}
	if !ok || err != nil {
		return Vrate{}, fault.Input("vrate", "%q is not face, honest or MIN-MAX (percent, e.g. 1-100)", s)
	}
	if !(lo >= 1 && hi <= 10000 && lo <= hi) {
		return Vrate{}, fault.Input("vrate", "%s: the kernel takes 1 ≤ MIN ≤ MAX ≤ 10000 (percent)", s)
	}
	return Vrate{Min: lo, Max: hi}, nil
}

// SetVrate sets the bounds of the report's QoS as v says, and returns
// what the user should know of them: how an honest QoS was scaled, or,
// at face value, a model that promises more than was measured (nil:
// nothing to say). A QoS that cannot be set so is bad input of the
// option "vrate".
func (r *Report) SetVrate(v Vrate) (*fault.Mention, error) {
	d := &r.Derived
	switch {
	case v.Honest:
		q, how, err := Honest(*d, r.Check)
		if err != nil {
			return nil, fault.Input("vrate", "honest: %w", err)
		}
		d.QoS, r.QoSLine = &q, q.Line(d.Device)
		return fault.NewMention(func(fault.Namer) string { return "io.cost.qos " + how }), nil
	case v.Max > 0 && d.QoS == nil:
		return nil, fault.Input("vrate", "%s-%s: no QoS was derived to set it in (the QoS rate runs are missing)",
			strconv.FormatFloat(v.Min, 'f', -1, 64), strconv.FormatFloat(v.Max, 'f', -1, 64))
	case v.Max > 0:
		q := *d.QoS
		q.Min, q.Max = v.Min, v.Max
		d.QoS, r.QoSLine = &q, q.Line(d.Device)
	case r.Check.HonestVratePct < 100 && d.QoS != nil:
		h, floor := r.Check.HonestVratePct, d.QoS.Min
		return fault.NewMention(func(n fault.Namer) string {
			return fmt.Sprintf("note: the model promises more than was measured (honest vrate %.2f %%), so its vrate floor min=%.0f is %.0f %% of what the device was measured to do, below which iocost cannot slow it: %s honest scales min and max by the honest vrate, %s 1-100 lets the QoS slow it as far as its latency targets ask",
				h, floor, floor*100/h, n("vrate"), n("vrate"))
		}), nil
	}
	return nil, nil
}
