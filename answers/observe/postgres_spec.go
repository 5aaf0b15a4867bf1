package observe

import (
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lib/pq"
)

// PostgresSpec is a parsed PostgreSQL source: the system the figures
// belong to and the server's connection settings. Its String never
// shows the password.
type PostgresSpec struct {
	// System names the system the server's figures belong to; observe
	// matches it to the cgroup system of the same name.
	System string
	// source says where the connection string came from ("env:VAR",
	// "file:PATH" or "the command line"), for messages.
	source string
	cfg    *pq.Config
}

// String is the spec as it may be shown: SYSTEM=CONNINFO, without the
// password.
func (s PostgresSpec) String() string { return s.System + "=" + s.Redacted() }

// Redacted is the connection's host, port, user and database as a
// connection string, without the password.
func (s PostgresSpec) Redacted() string {
	if s.cfg == nil {
		return "(none)"
	}
	var kv []string
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, k+"="+conninfoQuote(v))
		}
	}
	add("host", s.cfg.Host)
	if s.cfg.Hostaddr.IsValid() {
		add("hostaddr", s.cfg.Hostaddr.String())
	}
	add("port", strconv.Itoa(int(s.cfg.Port)))
	add("user", s.cfg.User)
	add("dbname", s.cfg.Database)
	return strings.Join(kv, " ")
}

// conninfoQuote quotes a connection string's value where libpq needs it.
func conninfoQuote(v string) string {
	if v != "" && !strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '\'' || r == '\\' }) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// postgresSyntax is how a PostgreSQL source is written
// (ParsePostgresSpec): a prefix that is one of libpq's keywords starts a
// connection string, and names no system.
var postgresSyntax = sourceSyntax{system: "postgres", what: "connection string",
	example: "a connection string such as 'host=db1 user=monitor dbname=postgres' or postgres://monitor@db1/postgres",
	keyword: func(s string) bool { return slices.Contains(libpqKeywords, s) }}

// libpqKeywords are libpq's connection parameters (libpq's "Parameter
// Key Words", PostgreSQL 18).
var libpqKeywords = []string{"host", "hostaddr", "port", "dbname", "user", "password", "passfile",
	"require_auth", "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
	"fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
	"tcp_user_timeout", "replication", "gssencmode", "sslmode", "requiressl", "sslnegotiation", "sslcompression",
	"sslcert", "sslkey", "sslkeylogfile", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir",
	"sslsni", "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "min_protocol_version",
	"max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs",
	"load_balance_hosts"}

// ParsePostgresSpec reads a PostgreSQL source as a user writes it,
// [SYSTEM=]SOURCE; SYSTEM defaults to "postgres" and is none of libpq's
// keywords (host=... starts a connection string). SOURCE is env:VAR (the
// connection string is in that environment variable), file:PATH (the
// file's first line; the file must be private to its owner) or a libpq
// connection string or URI, such as 'host=db1 user=monitor' or
// postgres://monitor@db1/postgres, without a password, which would show
// in ps. A connection without a password takes PGPASSWORD's, as psql
// does (and pq, as psql, reads the other PG* variables and ~/.pgpass).
// getenv is os.LookupEnv in production. The errors wrap ErrDatabaseSpec
// and never quote the connection string.
func ParsePostgresSpec(arg string, getenv func(string) (string, bool)) (PostgresSpec, error) {
	system, dsn, from, err := readSource(arg, postgresSyntax, getenv)
	if err != nil {
		return PostgresSpec{}, err
	}
	if i := strings.IndexByte(arg, '='); i > 0 && postgresSyntax.keyword(arg[:i]) &&
		(strings.HasPrefix(arg[i+1:], "env:") || strings.HasPrefix(arg[i+1:], "file:")) {
		return PostgresSpec{}, fmt.Errorf("%w: %q is a connection keyword, not a system's name: name the system otherwise", ErrDatabaseSpec, arg[:i])
	}
	spec := PostgresSpec{System: system, source: from}
	hasPassword, err := conninfoHasPassword(dsn)
	if err != nil {
		return PostgresSpec{}, fmt.Errorf("%w: %s: %w", ErrDatabaseSpec, from, err)
	}
	if hasPassword && from == commandLine {
		return PostgresSpec{}, fmt.Errorf("%w: the connection string on the command line holds a password, which any user sees in ps: "+
			"give it as env:VAR or file:PATH (mode 600), or the password alone in PGPASSWORD", ErrDatabaseSpec)
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return PostgresSpec{}, fmt.Errorf("%w: %s: %s", ErrDatabaseSpec, from, pqProblem(err))
	}
	if cfg.Password == "" {
		if pw, ok := getenv("PGPASSWORD"); ok {
			cfg.Password = pw
		}
	}
	if cfg.SSLMode == "" {
		// psql's default; pq's own is require, which a server without
		// TLS refuses.
		cfg.SSLMode = pq.SSLModePrefer
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = postgresTimeout
	}
	spec.cfg = &cfg
	return spec, nil
}

// ParsePostgresSpecs reads every PostgreSQL source (ParsePostgresSpec)
// before any is dialled: a system given two servers is refused.
func ParsePostgresSpecs(sources []string, getenv func(string) (string, bool)) ([]PostgresSpec, error) {
	return parseSpecs(sources, getenv, ParsePostgresSpec, func(s PostgresSpec) string { return s.System })
}

// conninfoForm is the syntax that messages about a malformed connection
// string show.
const conninfoForm = "key=value pairs ('host=db1 port=5432 user=monitor dbname=postgres') or a URI (postgres://monitor@db1:5432/postgres)"

// conninfoHasPassword tells whether a connection string, a URI or
// key=value pairs (libpq's syntax: values quoted with ' and escaped
// with \), holds a password. Its errors never quote the string.
func conninfoHasPassword(dsn string) (bool, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := neturl.Parse(dsn)
		if err != nil {
			return false, fmt.Errorf("malformed URI, expected %s", conninfoForm)
		}
		_, inUser := u.User.Password()
		return inUser || u.Query().Has("password"), nil
	}
	keys, err := conninfoKeys(dsn)
	if err != nil {
		return false, fmt.Errorf("%w, expected %s", err, conninfoForm)
	}
	return slices.Contains(keys, "password"), nil
}

// conninfoKeys are the keys of a key=value connection string, as libpq
// reads it.
func conninfoKeys(s string) ([]string, error) {
	r := []rune(s)
	i := 0
	skip := func() {
		for i < len(r) && unicode.IsSpace(r[i]) {
			i++
		}
	}
	var keys []string
	for {
		skip()
		if i == len(r) {
			return keys, nil
		}
		start := i
		for i < len(r) && !unicode.IsSpace(r[i]) && r[i] != '=' {
			i++
		}
		key := string(r[start:i])
		skip()
		if i == len(r) || r[i] != '=' || key == "" {
			return nil, errors.New("a key without '=' and a value")
		}
		i++
		skip()
		switch {
		case i < len(r) && r[i] == '\'':
			for i++; ; i++ {
				if i >= len(r) {
					return nil, errors.New("an unterminated quoted value")
				}
				if r[i] == '\\' {
					i++
				} else if r[i] == '\'' {
					i++
					break
				}
			}
		default:
			for ; i < len(r) && !unicode.IsSpace(r[i]); i++ {
				if r[i] == '\\' {
					if i++; i == len(r) {
						return nil, errors.New("a backslash at the end")
					}
				}
			}
		}
		keys = append(keys, key)
	}
}

// pqProblem says what is wrong with a connection string pq refused, in
// words that never quote it: pq's messages may quote values, and the
// string may hold a password.
func pqProblem(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "pq: environment variable $") {
		return msg // names a variable, quotes no value
	}
	return "malformed connection string (a key, a value or a PG* environment variable is invalid), expected " + conninfoForm
}

// scrub is the last line of defence for the password (scrubSecret).
func (s PostgresSpec) scrub(err error) error {
	if s.cfg == nil {
		return err
	}
	return scrubSecret(err, s.cfg.Password)
}
