package k8s

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// NodeCount is what a node selector of Options.Nodes finds.
type NodeCount struct {
	Schedulable int
	// Skipped are the nodes selected but not measured, each with why:
	// "node-c (cordoned)", "node-d (taint dedicated:NoSchedule)".
	Skipped []string
}

// CountNodes counts the schedulable nodes that selector ("all", or a
// label selector) selects. With none, it returns bad input for "nodes"
// beside the count, whose Skipped still names the nodes left out.
func CountNodes(ctx context.Context, c kubernetes.Interface, selector string) (NodeCount, error) {
	opts := metav1.ListOptions{}
	if selector != "all" {
		opts.LabelSelector = selector
	}
	list, err := c.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return NodeCount{}, fmt.Errorf("list nodes: %w", err)
	}
	var n NodeCount
	for _, node := range list.Items {
		if why := unschedulable(&node); why != "" {
			n.Skipped = append(n.Skipped, node.Name+" ("+why+")")
			continue
		}
		n.Schedulable++
	}
	if n.Schedulable == 0 {
		return n, fault.Input("nodes", "%q selects no schedulable node (of %d)", selector, len(list.Items))
	}
	return n, nil
}

// unschedulable says why no pod of the Job would run on n, or "".
func unschedulable(n *corev1.Node) string {
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return "taint " + t.Key + ":" + string(t.Effect)
		}
	}
	return ""
}
