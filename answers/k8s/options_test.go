package k8s

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// valid are options that pass: each case below changes one thing.
func valid() Options {
	return Options{Name: "t", Image: "img", Profile: "quick", BackoffLimitPerIndex: 1, TTL: time.Hour}
}

// Bad options are bad input naming the option at fault, and, where the
// message names a second option, a Mention that spells it as asked.
func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		nodes  int // as Spec takes it; nodesUnknown: before the cluster is asked
		option string
		text   string // the message, options named "--" + name
	}{
		{"name not a label", func(o *Options) { o.Name = "Not_A_Name" }, 0, "name",
			`"Not_A_Name" is not a Job name: lower-case letters, digits and '-', at most 50 characters`},
		{"name too long", func(o *Options) { o.Name = strings.Repeat("a", 51) }, 0, "name", "at most 50 characters"},
		{"no image", func(o *Options) { o.Image = "" }, 0, "image", "empty"},
		{"negative pods", func(o *Options) { o.Pods = new(-1) }, 0, "pods", "-1 must be positive"},
		{"no pods", func(o *Options) { o.Pods = new(0) }, nodesUnknown, "pods", "0 must be positive"},
		{"no pods of the nodes", func(o *Options) { o.Nodes, o.Pods = "all", new(0) }, 3, "pods", "0 must be positive"},
		{"negative parallel", func(o *Options) { o.Parallel = -1 }, 0, "parallel", "-1 must be positive"},
		{"small volume", func(o *Options) { o.Size = new("1MiB") }, 0, "size", `"1MiB" is not a volume size of 64MiB or more (e.g. 16GiB)`},
		{"size not a size", func(o *Options) { o.Size = new("lots") }, 0, "size", `"lots" is not a volume size`},
		{"empty size", func(o *Options) { o.Size = new("") }, 0, "size", `"" is not a volume size`},
		{"host path without nodes", func(o *Options) { o.HostPath = "/x" }, 0, "host-path",
			"only applies with --nodes (one pod per node)"},
		{"relative host path", func(o *Options) { o.Nodes, o.Pods, o.HostPath = "all", new(2), "rel" }, 0, "host-path",
			`"rel" is not an absolute path`},
		{"host path and a class", func(o *Options) { o.Nodes, o.Pods, o.HostPath, o.StorageClass = "all", new(2), "/x", new("") }, 0,
			"storage-class", "does not apply with --host-path (the node's directory is measured)"},
		{"host path and a size", func(o *Options) { o.Nodes, o.Pods, o.HostPath, o.Size = "all", new(2), "/x", new(DefaultSize) }, 0,
			"size", "does not apply with --host-path"},
		{"host path and a block volume", func(o *Options) { o.Nodes, o.Pods, o.HostPath, o.Block = "all", new(2), "/x", true }, 0,
			"block", "does not apply with --host-path"},
		{"class first", func(o *Options) {
			o.Nodes, o.HostPath, o.StorageClass, o.Size, o.Block = "all", "/x", new("a"), new("1Gi"), true
		},
			nodesUnknown, "storage-class", "does not apply with --host-path"},
		{"selector that does not parse", func(o *Options) { o.Nodes, o.Pods = "a in (", new(2) }, 0, "nodes", "unable to parse requirement"},
		{"selector of nothing", func(o *Options) { o.Nodes, o.Pods = " ", new(2) }, 0, "nodes", `" " selects nothing; use all for every node`},
		{"nodes, not asked", func(o *Options) { o.Nodes = "all" }, 0, "pods",
			"manifest does not contact the cluster: give the number of nodes that --nodes all selects"},
		{"nodes, counted otherwise", func(o *Options) { o.Nodes, o.Pods = "zone=a", new(4) }, 3, "pods",
			"4 given, but --nodes zone=a selects 3 schedulable nodes"},
		{"negative backoff", func(o *Options) { o.BackoffLimitPerIndex = -1 }, 0, "backoff-limit-per-index", "-1 must not be negative"},
		{"short ttl", func(o *Options) { o.TTL = 59 * time.Second }, nodesUnknown, "ttl",
			"59s is too short: the finished Job, and its pods' logs, would go before they are collected (1m at least)"},
		{"no ttl", func(o *Options) { o.TTL = 0 }, 0, "ttl", "0s is too short"},
		{"no such profile", func(o *Options) { o.Profile = "nope" }, nodesUnknown, "profile", `unknown profile "nope"`},
		{"cap without privilege", func(o *Options) { o.Cap = "riops=100" }, 0, "cap",
			"a cap inside a pod needs root, privilege and the host's cgroup tree: add --privileged (the pods then leave the PodSecurity restricted profile)"},
		{"cgroup in the sweep's flags", func(o *Options) { o.SweepArgs = []string{"--runtime", "5s", "--cgroup=/x"} }, 0, "cap", "add --privileged"},
	} {
		o := valid()
		tc.change(&o)
		s, err := o.spec(tc.nodes)
		var ie *fault.InputError
		if s != nil || !errors.As(err, &ie) || ie.Option != tc.option {
			t.Errorf("%s: spec %v, error %v; want bad input for %q", tc.name, s, err, tc.option)
			continue
		}
		text := ie.Err.Error()
		var m *fault.Mention
		if errors.As(ie.Err, &m) {
			text = m.Text(func(option string) string { return "--" + option })
		}
		if !strings.Contains(text, tc.text) {
			t.Errorf("%s: %q, want %q", tc.name, text, tc.text)
		}
		if strings.Contains(ie.Error(), "--") {
			t.Errorf("%s: %q names a flag", tc.name, ie.Error())
		}
	}
}

// What options give: the counts, the volume and the placement, with
// their defaults.
func TestOptionsSpec(t *testing.T) {
	for _, tc := range []struct {
		name           string
		change         func(*Options)
		nodes          int
		pods, parallel int
		fileSize       string
		class          string // "<none>": the cluster's default
		perNode        bool
		selector       int // node selector requirements
	}{
		{"defaults: one volume", func(*Options) {}, 0, 1, 1, "14745MiB", "<none>", false, 0},
		{"volumes one at a time", func(o *Options) { o.Pods = new(3) }, 0, 3, 1, "14745MiB", "<none>", false, 0},
		{"no more at a time than pods", func(o *Options) { o.Pods, o.Parallel = new(2), 5 }, 0, 2, 2, "14745MiB", "<none>", false, 0},
		{"Kubernetes' size", func(o *Options) { o.Size, o.StorageClass = new("100Gi"), new("gp3") }, 0, 1, 1, "92160MiB", "gp3", false, 0},
		{"no class", func(o *Options) { o.StorageClass = new("") }, 0, 1, 1, "14745MiB", "", false, 0},
		{"block: no test file", func(o *Options) { o.Block = true }, 0, 1, 1, "", "<none>", false, 0},
		{"nodes, as many as given", func(o *Options) { o.Nodes, o.Pods = "all", new(4) }, 0, 4, 4, "14745MiB", "<none>", true, 0},
		{"nodes, as many as counted", func(o *Options) { o.Nodes, o.HostPath = "zone in (a,b),ssd", "/srv" }, 3, 3, 3, "", "<none>", true, 2},
		{"nodes, counted and given", func(o *Options) { o.Nodes, o.Pods, o.Parallel = "all", new(3), 1 }, 3, 3, 1, "14745MiB", "<none>", true, 0},
		{"nodes, not counted yet", func(o *Options) { o.Nodes = "all" }, nodesUnknown, 1, 1, "14745MiB", "<none>", true, 0},
	} {
		o := valid()
		tc.change(&o)
		s, err := o.spec(tc.nodes)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		class := "<none>"
		if s.StorageClass != nil {
			class = *s.StorageClass
		}
		if s.Pods != tc.pods || s.Parallel != tc.parallel || s.FileSize != tc.fileSize || class != tc.class ||
			s.PerNode != tc.perNode || len(s.NodeSelector) != tc.selector {
			t.Errorf("%s: pods %d, parallel %d, file %q, class %q, per node %v, %d requirements; want %d, %d, %q, %q, %v, %d",
				tc.name, s.Pods, s.Parallel, s.FileSize, class, s.PerNode, len(s.NodeSelector),
				tc.pods, tc.parallel, tc.fileSize, tc.class, tc.perNode, tc.selector)
		}
	}
	o := valid()
	o.Name, o.Nodes, o.Pods = "", "zone notin (c),!spinning", new(2)
	s, err := o.Spec(0)
	if err != nil || !strings.HasPrefix(s.Name, "iomatrix-") || len(s.Name) != len("iomatrix-20060102-150405") {
		t.Fatalf("default name: %v, %v", s, err)
	}
	want := []corev1.NodeSelectorRequirement{
		{Key: "spinning", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"c"}},
	}
	if len(s.NodeSelector) != len(want) {
		t.Fatalf("requirements %+v", s.NodeSelector)
	}
	for i, r := range s.NodeSelector {
		if r.Key != want[i].Key || r.Operator != want[i].Operator || strings.Join(r.Values, ",") != strings.Join(want[i].Values, ",") {
			t.Errorf("requirement %d: %+v, want %+v", i, r, want[i])
		}
	}
}

// A profile file is shipped in the Spec, which names no built-in profile
// then; a cap joins the caller's sweep flags.
func TestOptionsSweep(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.yaml")
	profile := "name: mine\npatterns:\n  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 1}\n"
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	o := valid()
	o.Profile, o.SweepArgs, o.Cap, o.Privileged = file, []string{"--runtime", "5s"}, "riops=100", true
	s, err := o.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Profile != "" || string(s.ProfileYAML) != profile {
		t.Errorf("profile %q, shipped %q", s.Profile, s.ProfileYAML)
	}
	if want := []string{"--runtime", "5s", "--cap", "riops=100"}; !slices.Equal(s.SweepArgs, want) || len(o.SweepArgs) != 2 {
		t.Errorf("sweep args %q, want %q; the options' %q unchanged", s.SweepArgs, want, o.SweepArgs)
	}
	builtin := valid()
	if s, err := builtin.Spec(0); err != nil || s.Profile != "quick" || s.ProfileYAML != nil {
		t.Errorf("built-in profile: %+v, %v", s, err)
	}
}
