package k8s

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Gathering is what Run and CollectJob share: how they reach the
// cluster, where they save what a Job's indexes gave, how they report it.
type Gathering struct {
	// Connect reaches the cluster once everything else is checked: the
	// client and the namespace to use.
	Connect func() (kubernetes.Interface, string, error)
	// OutDir is where each index's document (JOB-INDEX.json) and the
	// fleet's (JOB-fleet.json) are saved.
	OutDir string
	// Report is the report of the fleet, or of the one document, written
	// to Stdout.
	Report report.FleetReport
	Stdout io.Writer
	Poll   time.Duration // between looks at the Job; 2s when zero
	// Notice is told the Job's progress, what is saved, what failed.
	Notice func(string)
}

// Run sweeps every volume or node as o asks. It checks o and g, connects,
// counts the nodes o.Nodes selects (telling g.Notice those it leaves
// out), creates the Job, gathers what its indexes gave as CollectJob does,
// and deletes everything it created, also once ctx is cancelled.
func Run(ctx context.Context, g Gathering, o *Options) error {
	s, err := o.spec(nodesUnknown)
	if err != nil {
		return err
	}
	c, ns, err := g.connect()
	if err != nil {
		return err
	}
	nodes := 0
	if o.Nodes != "" {
		count, err := CountNodes(ctx, c, o.Nodes)
		if len(count.Skipped) > 0 {
			g.Notice("not measured: " + strings.Join(count.Skipped, ", "))
		}
		if err != nil {
			return err
		}
		nodes = count.Schedulable
	}
	if err := o.place(s, nodes); err != nil { // the pods, now that the nodes are counted
		return err
	}
	s.Namespace = ns
	g.Notice(fmt.Sprintf("creating %s: %s of %s, %d at a time", s, units.Count(s.Pods, "pod"), s.Image, s.Parallel))
	defer func() {
		if g.delete(ctx, c, ns, s.Name) {
			g.Notice(fmt.Sprintf("deleted %s and everything it created", s))
		}
	}()
	if err := Create(ctx, c, s); err != nil {
		return err
	}
	return g.gather(ctx, c, ns, s.Name, Found{Indexes: s.Pods, PerNode: s.PerNode}, true)
}

// CollectJob gathers a Job made from a Spec (Find): it waits for the Job
// to end when wait is set, showing its pods, then saves the document of
// every index and, for more than one, their fleet, names each index that
// failed with its node and reason, and reports the fleet (or the one
// document). Indexes that gave nothing make the error. With del, it then
// deletes the Job and what it created.
func CollectJob(ctx context.Context, g Gathering, job string, wait, del bool) error {
	c, ns, err := g.connect()
	if err != nil {
		return err
	}
	found, err := Find(ctx, c, ns, job)
	if err != nil {
		return err
	}
	if del {
		defer g.delete(ctx, c, ns, job)
	}
	return g.gather(ctx, c, ns, job, found, wait)
}

// connect checks the output directory and the report, then connects.
func (g *Gathering) connect() (kubernetes.Interface, string, error) {
	if fi, err := os.Stat(g.OutDir); err != nil || !fi.IsDir() {
		return nil, "", fault.Input("out-dir", "%s is not a directory", g.OutDir)
	}
	if err := g.Report.Check(); err != nil {
		return nil, "", err
	}
	return g.Connect()
}

func (g *Gathering) gather(ctx context.Context, c kubernetes.Interface, ns, job string, found Found, wait bool) error {
	if wait {
		w := &Watcher{Client: c, Namespace: ns, Job: job, Poll: g.Poll, Progress: g.Notice}
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
	members, err := Collect(ctx, c, ns, job, found.Indexes)
	if err != nil {
		return err
	}
	saved, err := save(g.OutDir, job, members, found.PerNode, g.Notice)
	if err != nil {
		return err
	}
	doc, err := g.fleet(job, saved)
	if err == nil && doc != nil {
		err = g.Report.Write(g.Stdout, doc)
	}
	if err != nil {
		return err
	}
	return failed(job, members)
}

// fleet is the document to report: the one saved, or the fleet of those
// saved (report.Merge), itself saved to fleetFile; nil when none was.
func (g *Gathering) fleet(job string, saved []Saved) (*results.Document, error) {
	switch len(saved) {
	case 0:
		return nil, nil
	case 1:
		return saved[0].Document, nil
	}
	in := make([]report.MemberInput, len(saved))
	for i, m := range saved {
		in[i] = report.MemberInput{Doc: m.Document, Source: m.Path, Label: m.Label}
	}
	fleet, err := report.Merge(in)
	if err != nil {
		return nil, err
	}
	path := fleetFile(g.OutDir, job)
	if err := results.WriteFileAtomic(path, fleet); err != nil {
		return nil, err
	}
	g.Notice(fmt.Sprintf("fleet of %s saved to %s", units.Count(len(saved), "member"), path))
	return fleet, nil
}

// delete deletes a Job and what it created (Delete), telling g.Notice
// what kept it from doing so, and says whether it did.
func (g *Gathering) delete(ctx context.Context, c kubernetes.Interface, ns, job string) bool {
	if err := Delete(ctx, c, ns, job, g.Notice); err != nil {
		g.Notice(err.Error())
		return false
	}
	return true
}
