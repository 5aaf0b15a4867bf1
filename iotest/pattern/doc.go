// Package pattern holds iomatrix's pattern language: how a workload is
// written, read and checked, once, before any I/O.
//
// A pattern (results.Pattern, the type a results file stores) is written
// field by field (Fields: run's flags) or in one word (ParseSpec:
// RW:BS:QD[:RWMIX[:JOBS]] with fio's bssplit= and random_distribution=),
// and Build reads either into a pattern checked on its own (Validate).
// The fields that take fio's syntax, the block-size mix (ParseBSSplit) and
// the offset distribution (ParseDistribution), are kept in canonical form
// so that equal patterns compare equal. An open-loop pattern's rate
// (ParseRate) is IOPS, a rate per direction or a share of the pattern's
// closed-loop maximum; a load–latency sweep's loads are read by
// ParseRateSteps and a profile's by ParseShares. CheckTarget holds a
// checked pattern against the facts of the target it is to run on.
//
// Errors name the field at fault (FieldError), in the pattern's own
// terms; each front end spells the field its own way: a flag, a spec's
// field, a profile's key. Nothing here prints or reads a flag.
package pattern
