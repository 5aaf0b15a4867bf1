package isolate

import (
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
)

// Default io.weight of the victim and the aggressor under iocost.
const (
	DefaultVictimWeight    = 500
	DefaultAggressorWeight = 100
)

// ParseWeights reads the pair's io.weight, "victim=W1,aggressor=W2",
// each 1–10000; a key left out keeps its default. Its errors are bad
// input of the option "weight".
func ParseWeights(s string) (victim, aggressor int, err error) {
	victim, aggressor = DefaultVictimWeight, DefaultAggressorWeight
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return 0, 0, fault.Input("weight", "%q is not KEY=WEIGHT (victim=500,aggressor=100)", kv)
		}
		w, err := strconv.Atoi(v)
		if err != nil || w < cgroup.MinWeight || w > cgroup.MaxWeight {
			return 0, 0, fault.Input("weight", "%s=%s: a weight is a whole number from %d to %d", k, v, cgroup.MinWeight, cgroup.MaxWeight)
		}
		if seen[k] {
			return 0, 0, fault.Input("weight", "%s given twice", k)
		}
		seen[k] = true
		switch k {
		case "victim":
			victim = w
		case "aggressor":
			aggressor = w
		default:
			return 0, 0, fault.Input("weight", "%q is not victim or aggressor", k)
		}
	}
	return victim, aggressor, nil
}
