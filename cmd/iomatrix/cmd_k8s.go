package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/k8s"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// defaultImage is what the podman build of docs/fleets.md tags.
var defaultImage = "localhost/iomatrix:" + results.Version

func newK8sCommand(g *globalOptions) *cobra.Command {
	return group("k8s", "Sweep every volume of a StorageClass, or every node, as a Kubernetes Job",
		newK8sRunCommand(g), newK8sManifestCommand(g), newK8sCollectCommand(g))
}

// k8sSpecOptions are the flags that decide the Job: shared by run and
// manifest. Those whose absence is a choice of its own become pointers
// in k8s.Options when they are given.
type k8sSpecOptions struct {
	k8s.Options
	pods         int
	storageClass string
	size         string
}

func (o *k8sSpecOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Name, "name", "", "name of the Job and label of everything it creates (default: iomatrix-YYYYMMDD-HHMMSS)")
	f.StringVar(&o.Image, "image", defaultImage, "the iomatrix image, built from the Containerfile and pushed where the nodes can pull it")
	f.StringVarP(&o.Profile, "profile", "p", profiles.DefaultName, "built-in profile name, or a YAML file (shipped to the pods in a ConfigMap)")
	f.IntVar(&o.pods, "pods", 0, "volumes to measure, one pod each (default 1); with --nodes, manifest needs it as the number of nodes")
	f.IntVar(&o.Parallel, "parallel", 0, "pods at a time (default: 1 for volumes, which may share a backend; all for nodes)")
	f.StringVar(&o.storageClass, "storage-class", "", "StorageClass of each pod's generic ephemeral volume; omit the flag for the cluster's default class, while "+
		"--storage-class '' asks for no class: the claim binds only to a pre-provisioned PersistentVolume without a class")
	f.StringVar(&o.size, "size", k8s.DefaultSize, "size of each pod's volume (16GiB or 16Gi); the test file fills 90 % of it")
	f.BoolVar(&o.Block, "block", false, "a raw block volume (volumeMode Block), measured as a device: its data is overwritten")
	f.StringVar(&o.Nodes, "nodes", "", "one pod per node: all, or a label selector (e.g. node-role.kubernetes.io/storage=true)")
	f.StringVar(&o.HostPath, "host-path", "", "with --nodes: measure this directory of each node instead of an ephemeral volume")
	f.BoolVar(&o.Privileged, "privileged", false, "run the pods as root, privileged, with the host's cgroup tree: what --cap needs")
	f.StringVar(&o.Cap, "cap", "", "run each sweep under these I/O limits (see iomatrix sweep --cap); needs --privileged")
	f.Int32Var(&o.BackoffLimitPerIndex, "backoff-limit-per-index", 1, "retries of a failed pod, per index (exit status 2, bad input, is never retried)")
	durationVar(f, &o.TTL, "ttl", 24*time.Hour, "the cluster deletes the finished Job after this long (ttlSecondsAfterFinished), if nothing else did")
}

// options are the flags' k8s.Options, with the sweep flags after "--".
func (o *k8sSpecOptions) options(g *globalOptions, cmd *cobra.Command, args []string) (*k8s.Options, error) {
	ko, f := o.Options, cmd.Flags()
	if f.Changed("parallel") && o.Parallel == 0 {
		// 0 is the default's stand-in: given, it would be read as left out.
		return nil, usagef("--parallel: 0 must be positive (leave the flag out for the default)")
	}
	ko.Pods, ko.StorageClass, ko.Size = given(f.Changed("pods"), &o.pods), given(f.Changed("storage-class"), &o.storageClass), given(f.Changed("size"), &o.size)
	var err error
	if ko.SweepArgs, err = sweepArgs(g, cmd, args); err != nil {
		return nil, err
	}
	return &ko, openLoopArgs(ko.SweepArgs, ko.Profile)
}

// sweepArgs are the flags after "--", parsed as iomatrix sweep parses
// them, so that a typo fails here, before anything is created.
func sweepArgs(g *globalOptions, cmd *cobra.Command, args []string) ([]string, error) {
	at := cmd.ArgsLenAtDash()
	if at < 0 {
		at = len(args)
	}
	if at > 0 {
		return nil, usagef("%s takes no argument (%q); sweep flags go after --", cmd.CommandPath(), args[:at])
	}
	f := newSweepCommand(g).Flags()
	f.SetNormalizeFunc(fioNames)
	if err := f.Parse(args); err != nil {
		return nil, usagef("after --: %w (these flags go to iomatrix sweep)", err)
	}
	if f.NArg() > 0 {
		return nil, usagef("after --: %q: the pods' target is their volume, give only sweep flags", f.Args())
	}
	for _, name := range k8s.OwnSweepFlags {
		if f.Changed(name) {
			return nil, usagef("after --: --%s is set by iomatrix k8s itself", name)
		}
	}
	return args, nil
}

// openLoopArgs judges, before the cluster is asked anything, what the
// pods' sweep would refuse only once it runs: open-loop cells (--rates,
// or a profile's loads) with an engine or a window that cannot run them
// (iotest.CheckOpen, which session.Prepare applies on the target).
func openLoopArgs(args []string, profile string) error {
	f := newSweepCommand(&globalOptions{}).Flags()
	f.SetNormalizeFunc(fioNames)
	if err := f.Parse(args); err != nil {
		return usagef("after --: %w (these flags go to iomatrix sweep)", err)
	}
	open := f.Changed("rates")
	if p, err := profiles.Load(profile); err == nil && len(p.Loads) > 0 {
		open = true
	}
	if !open {
		return nil
	}
	o := iotest.Options{Engine: f.Lookup("engine").Value.String()}
	if f.Changed("runtime") && f.Lookup("runtime").Value.String() == "auto" {
		o.Auto = &iotest.Auto{}
	}
	o.Ring.Poll = f.Changed("poll") && f.Lookup("poll").Value.String() == "true"
	return iotest.CheckOpen(o, o.Engine)
}

func newK8sManifestCommand(g *globalOptions) *cobra.Command {
	var spec k8sSpecOptions
	cmd := command("k8s-manifest", "manifest [flags] [-- SWEEP FLAGS]", "Print the Job that k8s run would create, as YAML", nil,
		func(cmd *cobra.Command, args []string) error {
			ko, err := spec.options(g, cmd, args)
			if err != nil {
				return err
			}
			return ko.WriteManifest(g.stdout)
		})
	cmd.Flags().StringVarP(&spec.Namespace, "namespace", "n", "", "namespace of the objects (default: none, kubectl apply decides)")
	spec.AddFlags(cmd.Flags())
	return cmd
}
