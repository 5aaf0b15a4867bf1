package observe

import "context"

// A Database is a database server read for its own view of its I/O:
// counters that only grow while the server runs, and its uptime, so that
// a restart (the counters start again from zero) is told from a quiet
// spell.
type Database interface {
	// Kind names the server's protocol: "mysql".
	Kind() string
	// Status reads the counters, by the names of DatabaseCounters.
	Status(ctx context.Context) (DBStatus, error)
	Close() error
}

// DBStatus is one reading of a database's counters.
type DBStatus struct {
	Counters map[string]uint64
	// UptimeS is the server's uptime in seconds: less than at the last
	// reading means it restarted.
	UptimeS uint64
	// Queries, when the server reports it (0 otherwise), is a count that
	// grows at every reading while the server runs: less than at the last
	// reading means it restarted, to the reading, not to the second.
	Queries uint64
}
