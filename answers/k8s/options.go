package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/profiles"
)

// Options are a fleet run as asked for, each option in its own terms and
// unset (nil) where leaving it out is a choice of its own. Spec checks
// them and settles the defaults. Its errors are fault.InputErrors naming
// the option at fault ("pods", "size", "host-path" …); where the message
// names a second option, its Err is a *fault.Mention.
type Options struct {
	Name      string // of the Job; "": iomatrix-YYYYMMDD-HHMMSS, in UTC
	Namespace string
	Image     string

	// Profile is a built-in profile's name, or a profile file, which the
	// Spec ships in a ConfigMap.
	Profile string
	// SweepArgs are further flags of the pods' sweep, checked by the
	// caller, who knows the sweep's flags, to set none of OwnSweepFlags.
	SweepArgs []string
	// Cap runs each pod's sweep under these limits (the sweep's cap),
	// which, like a cap or a cgroup in SweepArgs, needs Privileged.
	Cap string

	// Pods is the number of volumes (nil: one), or of the nodes that
	// Nodes selects (nil: as many as the cluster has); at least one.
	Pods *int
	// Parallel is the pods at a time; 0: one for volumes (which may
	// share a backend), all for nodes.
	Parallel int

	// StorageClass is each volume's class; nil: the cluster's default;
	// "": no class (a pre-provisioned volume without one).
	StorageClass *string
	// Size is each volume's size, 16GiB or Kubernetes' 16Gi; nil:
	// DefaultSize. The test file on a filesystem volume fills 90 % of it.
	Size  *string
	Block bool // a raw block volume, measured as a device

	// Nodes asks for one pod per node: "all", or a label selector of
	// nodes; "": one pod per volume.
	Nodes string
	// HostPath, with Nodes, is a directory of each node to measure
	// instead of a volume.
	HostPath string

	Privileged           bool
	BackoffLimitPerIndex int32
	TTL                  time.Duration // at least MinTTL
}

const (
	// DefaultSize is a volume's size when Options leave it out.
	DefaultSize = "16GiB"
	// MinTTL is the shortest TTL: the finished Job, and its pods' logs,
	// must stay until they are collected.
	MinTTL = time.Minute
	// minVolume is the smallest volume worth measuring.
	minVolume = 64 << 20
	// maxName leaves room for the suffixes of the pods' names.
	maxName = 50
)

// OwnSweepFlags are the flags of the pods' sweep that the Job sets itself
// (Spec.sweepArgs) or that would undo what it sets.
var OwnSweepFlags = []string{"profile", "format", "frame", "out", "resume", "help"}

// nodesUnknown is a node count not asked yet: that of the check before
// the cluster is asked anything.
const nodesUnknown = -1

// Spec checks the options and builds the run's Spec. nodes is the number
// of schedulable nodes that Nodes selects (CountNodes), or 0 when the
// cluster is not asked (a manifest): Pods must then say how many.
func (o *Options) Spec(nodes int) (*Spec, error) {
	return o.spec(max(nodes, 0))
}

func (o *Options) spec(nodes int) (*Spec, error) {
	s := &Spec{Name: o.Name, Namespace: o.Namespace, Image: o.Image, StorageClass: o.StorageClass, Block: o.Block, HostPath: o.HostPath,
		Privileged: o.Privileged, BackoffLimitPerIndex: o.BackoffLimitPerIndex, TTL: o.TTL}
	if err := o.sweep(s); err != nil {
		return nil, err
	}
	if s.Name == "" {
		s.Name = "iomatrix-" + time.Now().UTC().Format("20060102-150405")
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 || len(s.Name) > maxName {
		return nil, fault.Input("name", "%q is not a Job name: lower-case letters, digits and '-', at most %d characters", s.Name, maxName)
	}
	if o.Image == "" {
		return nil, fault.Input("image", "empty")
	}
	if err := o.place(s, nodes); err != nil {
		return nil, err
	}
	if o.BackoffLimitPerIndex < 0 {
		return nil, fault.Input("backoff-limit-per-index", "%d must not be negative", o.BackoffLimitPerIndex)
	}
	if o.TTL < MinTTL {
		return nil, fault.Input("ttl", "%s is too short: the finished Job, and its pods' logs, would go before they are collected (1m at least)", o.TTL)
	}
	return s, nil
}

// sweep settles what the pods' sweep is given: the profile, a file's
// content to ship, and the caller's flags with the cap.
func (o *Options) sweep(s *Spec) error {
	p, err := profiles.Load(o.Profile)
	if err != nil {
		return fault.Input("profile", "%w", err)
	}
	s.Profile = o.Profile
	if p.File() != "" {
		if s.ProfileYAML, err = os.ReadFile(o.Profile); err != nil {
			return fault.Input("profile", "%w", err)
		}
		s.Profile = ""
	}
	s.SweepArgs = slices.Clip(o.SweepArgs)
	if o.Cap != "" {
		s.SweepArgs = append(s.SweepArgs, "--cap", o.Cap)
	}
	if !o.Privileged && (slices.ContainsFunc(s.SweepArgs, isFlag("cap")) || slices.ContainsFunc(s.SweepArgs, isFlag("cgroup"))) {
		return mention("cap", func(name fault.Namer) string {
			return "a cap inside a pod needs root, privilege and the host's cgroup tree: add " + name("privileged") +
				" (the pods then leave the PodSecurity restricted profile)"
		})
	}
	return nil
}

// isFlag matches the sweep's flag name in a command line.
func isFlag(name string) func(string) bool {
	return func(a string) bool { return a == "--"+name || strings.HasPrefix(a, "--"+name+"=") }
}

// place decides volumes or nodes, and the pod counts.
func (o *Options) place(s *Spec, nodes int) error {
	pods := 0 // not given
	if o.Pods != nil {
		if pods = *o.Pods; pods <= 0 { // an explicit 0 measures nothing
			return fault.Input("pods", "%d must be positive", pods)
		}
	}
	if o.Parallel < 0 {
		return fault.Input("parallel", "%d must be positive", o.Parallel)
	}
	sizeText := DefaultSize
	if o.Size != nil {
		sizeText = *o.Size
	}
	size, err := volumeSize(sizeText)
	if err != nil {
		return err
	}
	s.VolumeSize = *resource.NewQuantity(size, resource.BinarySI)
	if o.HostPath != "" {
		if o.Nodes == "" {
			return mention("host-path", func(name fault.Namer) string { return "only applies with " + name("nodes") + " (one pod per node)" })
		}
		if !filepath.IsAbs(o.HostPath) {
			return fault.Input("host-path", "%q is not an absolute path", o.HostPath)
		}
		for _, given := range []struct {
			option string
			set    bool
		}{{"storage-class", o.StorageClass != nil}, {"size", o.Size != nil}, {"block", o.Block}} {
			if given.set {
				return mention(given.option, func(name fault.Namer) string {
					return "does not apply with " + name("host-path") + " (the node's directory is measured)"
				})
			}
		}
	} else if !o.Block {
		s.FileSize = strconv.FormatInt(size/10*9>>20, 10) + "MiB"
	}
	s.Pods, s.Parallel = max(pods, 1), o.Parallel
	if o.Nodes == "" {
		if s.Parallel == 0 {
			s.Parallel = 1
		}
		s.Parallel = min(s.Parallel, s.Pods)
		return nil
	}
	s.PerNode = true
	if o.Nodes != "all" {
		req, err := nodeRequirements(o.Nodes)
		if err != nil {
			return fault.Input("nodes", "%w", err)
		}
		s.NodeSelector = req
	}
	switch {
	case nodes == nodesUnknown:
	case nodes > 0:
		if pods > 0 && pods != nodes {
			return mention("pods", func(name fault.Namer) string {
				return fmt.Sprintf("%d given, but %s %s selects %d schedulable nodes", pods, name("nodes"), o.Nodes, nodes)
			})
		}
		s.Pods = nodes
	case pods == 0:
		return mention("pods", func(name fault.Namer) string {
			return fmt.Sprintf("manifest does not contact the cluster: give the number of nodes that %s %s selects", name("nodes"), o.Nodes)
		})
	}
	if s.Parallel == 0 {
		s.Parallel = s.Pods
	}
	s.Parallel = min(s.Parallel, s.Pods)
	return nil
}

// volumeSize reads a volume's size in iomatrix's spelling (16GiB) or
// Kubernetes' (16Gi).
func volumeSize(text string) (int64, error) {
	size, err := units.ParseSize(text)
	if q, qerr := resource.ParseQuantity(text); err != nil && qerr == nil {
		size, err = q.Value(), nil
	}
	if err != nil || size < minVolume {
		return 0, fault.Input("size", "%q is not a volume size of 64MiB or more (e.g. %s)", text, DefaultSize)
	}
	return size, nil
}

// nodeRequirements turns a label selector into node affinity terms.
func nodeRequirements(sel string) ([]corev1.NodeSelectorRequirement, error) {
	parsed, err := labels.Parse(sel)
	if err != nil {
		return nil, err
	}
	reqs, _ := parsed.Requirements()
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%q selects nothing; use all for every node", sel)
	}
	ops := map[selection.Operator]corev1.NodeSelectorOperator{
		selection.Equals: corev1.NodeSelectorOpIn, selection.DoubleEquals: corev1.NodeSelectorOpIn, selection.In: corev1.NodeSelectorOpIn,
		selection.NotEquals: corev1.NodeSelectorOpNotIn, selection.NotIn: corev1.NodeSelectorOpNotIn,
		selection.Exists: corev1.NodeSelectorOpExists, selection.DoesNotExist: corev1.NodeSelectorOpDoesNotExist,
		selection.GreaterThan: corev1.NodeSelectorOpGt, selection.LessThan: corev1.NodeSelectorOpLt,
	}
	out := make([]corev1.NodeSelectorRequirement, len(reqs))
	for i, r := range reqs {
		out[i] = corev1.NodeSelectorRequirement{Key: r.Key(), Operator: ops[r.Operator()], Values: r.Values().List()}
	}
	return out, nil
}

// mention is bad input of option whose message names other options.
func mention(option string, text func(fault.Namer) string) error { return fault.Mentions(option, text) }
