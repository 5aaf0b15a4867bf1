package iocost

import (
	"errors"
	"fmt"
	"math"

	"github.com/iomatrix/iomatrix/results"
)

// Figure is one parameter and where it came from.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Cell names the result it was read from; How says how.
	Cell string `json:"cell,omitempty"`
	How  string `json:"how"`
}

// Derived is the model and QoS derived from measured cells.
type Derived struct {
	// Device is MAJ:MIN of the disk measured, as the results name it.
	Device  string   `json:"device"`
	Model   Model    `json:"model"`
	Figures []Figure `json:"figures"`
	// QoS is nil when the results hold no open-loop runs to set the
	// latency targets from.
	QoS        *QoS     `json:"qos,omitempty"`
	QoSFigures []Figure `json:"qos_figures,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// ErrCannotDerive: the results lack a cell the model needs.
var ErrCannotDerive = errors.New("the results cannot give the model")

// QoS rule, after Meta's rd-agent: the latency targets are the p95 of
// random I/O at 90 % of its measured IOPS, times 1.5; 95 % of I/Os on a
// solid-state device, 50 % on a rotational one; the vrate between 60 and
// 100 %.
const (
	QoSLoadShare  = 0.9
	QoSLatFactor  = 1.5
	QoSPctSSD     = 95
	QoSPctRot     = 50
	QoSMinVrate   = 60
	QoSMaxVrate   = 100
	qosLoadMargin = 0.1 // an open-loop cell within 80–100 % of the random IOPS counts
)

// Derive gives the model from the closed-loop cells of the documents (all
// of one target) and the QoS from their open-loop ones:
//   - rbps and wbps: the most bandwidth of any sequential cell of one
//     direction (the kernel's script measures 128 MiB blocks at QD1);
//   - rseqiops, rrandiops, wseqiops, wrandiops: the most IOPS of the 4K
//     cells of that access and direction (the script: QD64);
//   - rlat and wlat: the p95 completion (service) latency of an open-loop
//     4K random cell of that direction at about 90 % of the random IOPS,
//     times 1.5.
func Derive(docs []*results.Document) (Derived, error) {
	if len(docs) == 0 {
		return Derived{}, fmt.Errorf("%w: no results", ErrCannotDerive)
	}
	d := Derived{Device: docs[0].Target.Device}
	cells := Cells(docs)
	bps := func(name string, read bool) (uint64, error) {
		c, ok := best(cells, func(r results.Result) bool { return isSeq(r) && pureDir(r, read) },
			func(r results.Result) float64 { return dirStats(r, read).MiBPerS })
		if !ok {
			return 0, fmt.Errorf("%w: no sequential %s cell for %s", ErrCannotDerive, dirWord(read), name)
		}
		v := dirStats(c, read).MiBPerS * (1 << 20)
		how := fmt.Sprintf("the most bandwidth of the sequential %s cells: %.1f MiB/s at %s QD%d", dirWord(read),
			dirStats(c, read).MiBPerS, results.ShortSize(c.Pattern.BlockSize), c.Pattern.QueueDepth*max(c.Pattern.Jobs, 1))
		if c.Pattern.BlockSize < 1<<20 {
			d.Notes = append(d.Notes, fmt.Sprintf("%s comes from %s blocks: the kernel's script measures bandwidth with 128 MiB blocks, and smaller ones may not reach the device's", name, results.ShortSize(c.Pattern.BlockSize)))
		}
		d.Figures = append(d.Figures, Figure{Name: name, Value: math.Round(v), Cell: c.Name, How: how})
		return uint64(math.Round(v)), nil
	}
	iops := func(name string, read, random bool) (uint64, error) {
		c, ok := best(cells, unmergedFirst(cells, func(r results.Result) bool {
			return is4K(r) && pureDir(r, read) && (random == (r.Pattern.Access == results.Random)) && r.Pattern.Distribution == ""
		}), func(r results.Result) float64 { return dirStats(r, read).IOPS })
		if !ok {
			return 0, fmt.Errorf("%w: no 4K %s %s cell for %s", ErrCannotDerive, accessWord(random), dirWord(read), name)
		}
		if note := mergedNote(name, c, read); !random && note != "" {
			d.Notes = append(d.Notes, note)
		}
		v := dirStats(c, read).IOPS
		d.Figures = append(d.Figures, Figure{Name: name, Value: math.Round(v), Cell: c.Name,
			How: fmt.Sprintf("the most IOPS of the 4K %s %s cells, at QD%d", accessWord(random), dirWord(read), c.Pattern.QueueDepth*max(c.Pattern.Jobs, 1))})
		return uint64(math.Round(v)), nil
	}
	var err error
	m := &d.Model
	for _, f := range []func() error{
		func() error { m.RBps, err = bps("rbps", true); return err },
		func() error { m.RSeqIOPS, err = iops("rseqiops", true, false); return err },
		func() error { m.RRandIOPS, err = iops("rrandiops", true, true); return err },
		func() error { m.WBps, err = bps("wbps", false); return err },
		func() error { m.WSeqIOPS, err = iops("wseqiops", false, false); return err },
		func() error { m.WRandIOPS, err = iops("wrandiops", false, true); return err },
	} {
		if err := f(); err != nil {
			return Derived{}, err
		}
	}
	if err := m.Check(); err != nil {
		return Derived{}, fmt.Errorf("%w: %w", ErrCannotDerive, err)
	}
	d.deriveQoS(docs)
	return d, nil
}

// deriveQoS sets the QoS from open-loop 4K random cells near 90 % of the
// random IOPS, when the results hold one of each direction.
func (d *Derived) deriveQoS(docs []*results.Document) {
	pct := float64(QoSPctSSD)
	if docs[0].Target.Rotational {
		pct = QoSPctRot
	}
	q := QoS{RPct: pct, WPct: pct, Min: QoSMinVrate, Max: QoSMaxVrate}
	lat := func(name string, read bool, randIOPS uint64) (uint64, bool) {
		var found *results.Result
		var foundRef float64
		for _, doc := range docs {
			// The rule's 90 % is of the IOPS measured in the same run
			// when the run measured them (run --rate 90% does), else of
			// the model's.
			ref := float64(randIOPS)
			if c, ok := best(doc.Results, func(r results.Result) bool {
				return is4K(r) && r.Pattern.Access == results.Random && pureDir(r, read) && r.Pattern.Distribution == ""
			}, func(r results.Result) float64 { return dirStats(r, read).IOPS }); ok {
				ref = dirStats(c, read).IOPS
			}
			for i, r := range doc.Results {
				if !r.Pattern.Rate.Open() || !is4K(r) || r.Pattern.Access != results.Random || !pureDir(r, read) {
					continue
				}
				off := r.Pattern.Rate.Total()
				if math.Abs(off/(QoSLoadShare*ref)-1) > qosLoadMargin/QoSLoadShare {
					continue
				}
				if found == nil || math.Abs(off/ref-QoSLoadShare) < math.Abs(found.Pattern.Rate.Total()/foundRef-QoSLoadShare) {
					found, foundRef = &doc.Results[i], ref
				}
			}
		}
		if found == nil {
			return 0, false
		}
		l := dirStats(*found, read).LatNS
		p, which := l.P95, "p95"
		if p == 0 {
			p, which = l.P99, "p99 (the file records no p95)"
		}
		v := uint64(math.Ceil(float64(p) / 1000 * QoSLatFactor))
		d.QoSFigures = append(d.QoSFigures, Figure{Name: name, Value: float64(v), Cell: found.Name,
			How: fmt.Sprintf("the %s completion latency at %.0f IOPS (%.0f %% of the %.0f measured) × %.1f: %.0f µs × %.1f", which,
				found.Pattern.Rate.Total(), 100*found.Pattern.Rate.Total()/foundRef, foundRef, QoSLatFactor, float64(p)/1000, QoSLatFactor)})
		return v, true
	}
	rl, rok := lat("rlat", true, d.Model.RRandIOPS)
	wl, wok := lat("wlat", false, d.Model.WRandIOPS)
	if !rok || !wok {
		d.QoSFigures = nil
		d.Notes = append(d.Notes, fmt.Sprintf("no io.cost.qos: it needs an open-loop 4K random read and write cell each at about %.0f %% of the random IOPS measured in its run (or of the model's, %d and %d), whose p95 latency sets rlat and wlat: iomatrix run TARGET --rw randread --bs 4k --qd 64 --rate 90%% -o FILE, and the same with randwrite", 100*QoSLoadShare, d.Model.RRandIOPS, d.Model.WRandIOPS))
		return
	}
	q.RLatUS, q.WLatUS = rl, wl
	d.QoSFigures = append(d.QoSFigures,
		Figure{Name: "rpct", Value: pct, How: pctHow(docs[0].Target.Rotational)}, Figure{Name: "wpct", Value: pct, How: pctHow(docs[0].Target.Rotational)},
		Figure{Name: "min", Value: QoSMinVrate, How: "the vrate's floor, rd-agent's rule"}, Figure{Name: "max", Value: QoSMaxVrate, How: "the vrate's ceiling: the model at face value"})
	d.QoS = &q
}

func pctHow(rot bool) string {
	if rot {
		return "a rotational device: the median"
	}
	return "a solid-state device: the 95th percentile"
}

// Cells are the results of the documents, closed-loop and open-loop, in
// order.
func Cells(docs []*results.Document) []results.Result {
	var out []results.Result
	for _, d := range docs {
		out = append(out, d.Results...)
	}
	return out
}

func best(cells []results.Result, keep func(results.Result) bool, by func(results.Result) float64) (results.Result, bool) {
	var b results.Result
	ok := false
	for _, r := range cells {
		if r.Pattern.Rate.Open() || r.Error != nil || !keep(r) {
			continue
		}
		if !ok || by(r) > by(b) {
			b, ok = r, true
		}
	}
	return b, ok
}

// mergesOff tells whether r ran with the disk's request merging off, as
// the kernel's procedure measures its 4K cells (the iocost profile's
// nomerges).
func mergesOff(r results.Result) bool { return r.Nomerges != nil && r.Nomerges.Value > 0 }

// unmergedFirst is keep, narrowed to the cells that ran with merging off
// when there are such among those it keeps: a merged sequential cell's
// IOPS are more than the requests the device served.
func unmergedFirst(cells []results.Result, keep func(results.Result) bool) func(results.Result) bool {
	for _, r := range cells {
		if keep(r) && mergesOff(r) {
			return func(r results.Result) bool { return keep(r) && mergesOff(r) }
		}
	}
	return keep
}

// mergedNote says that figure name comes from c, a cell measured with
// the disk's request merging on, and how much the disk merged; "" when
// merging was off.
func mergedNote(name string, c results.Result, read bool) string {
	if mergesOff(c) {
		return ""
	}
	merged := "the disk's merges were not counted"
	if m := c.Device.Merges; m != nil {
		n := m.Writes
		if read {
			n = m.Reads
		}
		merged = fmt.Sprintf("the disk merged %d requests in its window, of %d I/Os", n, dirStats(c, read).IOs)
	}
	return fmt.Sprintf("%s comes from %s, measured with the disk's request merging on (%s): the kernel's procedure turns it off, so that each sequential I/O is charged as one request, and a merged figure overstates the device's (sweep --profile iocost turns it off)",
		name, c.Name, merged)
}

func isSeq(r results.Result) bool { return r.Pattern.Access == results.Sequential }
func is4K(r results.Result) bool  { return r.Pattern.BlockSize == 4096 && r.Pattern.BSSplit == "" }
func pureDir(r results.Result, read bool) bool {
	return (read && r.Pattern.ReadPct == 100) || (!read && r.Pattern.ReadPct == 0)
}

func dirStats(r results.Result, read bool) results.DirStats {
	if read {
		return r.Read
	}
	return r.Write
}

func dirWord(read bool) string {
	if read {
		return "read"
	}
	return "write"
}

func accessWord(random bool) string {
	if random {
		return "random"
	}
	return "sequential"
}

// Honest is the derived QoS with its vrate bounds scaled by the check's
// honest vrate: the range the rule meant for a model at face value, for
// a model that promises the device more than it was measured to do; and
// how it was scaled. A check that judged no shape beyond those the model
// was read from has no honest vrate to give (an error).
func Honest(d Derived, ch Check) (QoS, string, error) {
	if d.QoS == nil {
		return QoS{}, "", errors.New("no QoS was derived to scale (the QoS rate runs are missing)")
	}
	own := map[string]bool{}
	for _, f := range d.Figures {
		own[f.Cell] = true
	}
	judged := 0
	for _, c := range ch.Cells {
		if c.Judged && !own[c.Name] {
			judged++
		}
	}
	if judged == 0 {
		return QoS{}, "", errors.New("the results judge the model on no shape beyond those it was read from: add cells of the shapes the device will carry (a sweep of the full profile, or runs of them)")
	}
	q := *d.QoS
	h := ch.HonestVratePct / 100
	out := q
	out.Min = math.Max(1, math.Round(q.Min*h*100)/100)
	out.Max = math.Max(out.Min, math.Round(q.Max*h*100)/100)
	return out, fmt.Sprintf("min and max scaled by the honest vrate, %.2f %% over %d shapes judged beyond the model's own: min %.2f → %.2f, max %.2f → %.2f",
		ch.HonestVratePct, judged, q.Min, out.Min, q.Max, out.Max), nil
}
