package k8s

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// ErrNotIomatrixJob is returned by Find for a Job that iomatrix did not
// make.
var ErrNotIomatrixJob = errors.New("not an iomatrix Job")

// Found is what collecting needs to know of a Job made from a Spec.
type Found struct {
	Indexes int  // its completions
	PerNode bool // one pod per node
}

// Find looks up a Job made from a Spec (by Create, or applied from its
// manifest); any other Job is bad input wrapping ErrNotIomatrixJob.
func Find(ctx context.Context, c kubernetes.Interface, ns, job string) (Found, error) {
	j, err := c.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		return Found{}, fmt.Errorf("get job/%s in namespace %s: %w", job, ns, err)
	}
	if j.Labels[LabelName] != appName || j.Spec.Completions == nil ||
		j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		return Found{}, fault.AsInput(fmt.Errorf("job/%s: %w (made by iomatrix k8s manifest or run)", job, ErrNotIomatrixJob))
	}
	aff := j.Spec.Template.Spec.Affinity
	return Found{Indexes: int(*j.Spec.Completions), PerNode: aff != nil && aff.PodAntiAffinity != nil}, nil
}

// Saved is the document of an index, saved to its file.
type Saved struct {
	Member
	Path string
	// Label names it in the fleet: vol-INDEX@NODE, or NODE when the run
	// has one pod per node.
	Label string
}

// save writes the document of every index that gave one to dir as
// JOB-INDEX.json, atomically, and tells note, index by index, what it
// saved and why each other index gave nothing.
func save(dir, job string, members []Member, perNode bool, note func(string)) ([]Saved, error) {
	var saved []Saved
	for _, m := range members {
		node := orUnknown(m.Node)
		if m.Document == nil {
			where := ""
			if m.Pod != "" {
				where = fmt.Sprintf(" (pod %s on node %s, %s)", m.Pod, node, units.Count(m.Attempts, "attempt"))
			}
			note(fmt.Sprintf("index %d%s failed: %s", m.Index, where, m.Failure))
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", job, m.Index))
		if err := results.WriteFileAtomic(path, m.Document); err != nil {
			return nil, err
		}
		note(fmt.Sprintf("index %d (node %s): %s saved to %s", m.Index, node, units.Count(len(m.Document.Results), "result"), path))
		label := fmt.Sprintf("vol-%d@%s", m.Index, node)
		if perNode {
			label = node
		}
		saved = append(saved, Saved{Member: m, Path: path, Label: label})
	}
	return saved, nil
}

// fleetFile is where the fleet document of a Job's indexes goes in dir.
func fleetFile(dir, job string) string { return filepath.Join(dir, job+"-fleet.json") }

// failed is the error of a Job whose indexes did not all give their
// document (or that has none), or nil.
func failed(job string, members []Member) error {
	failed := 0
	for _, m := range members {
		if m.Document == nil {
			failed++
		}
	}
	switch {
	case failed == len(members):
		return fmt.Errorf("job/%s: no pod gave results (%d failed)", job, failed)
	case failed == 0:
		return nil
	}
	return fmt.Errorf("job/%s: %d of %d indexes failed; the others' results are kept", job, failed, len(members))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
