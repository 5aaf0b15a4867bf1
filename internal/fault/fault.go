// Package fault marks an error with whose fault it is, so that the
// command line can give the exit status a script tests: bad input (a
// value that cannot work, refused before any I/O) or a lack of privilege.
//
// Libraries name the option at fault in their own terms ("cap",
// "pattern", "pods"); they never name a command-line flag, and a message
// that names another option does so through a Mention. The command line
// maps each option to the flag that set it.
package fault

import "fmt"

// InputError is bad input: an option's value that cannot work.
type InputError struct {
	// Option is the library's name for what was given ("" when the
	// message says it all, e.g. a target path).
	Option string
	Err    error
}

func (e *InputError) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return e.Option + ": " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// Input is an InputError for option, with a message formatted as by
// fmt.Errorf (so %w wraps).
func Input(option, format string, args ...any) error {
	return &InputError{Option: option, Err: fmt.Errorf(format, args...)}
}

// AsInput marks err as bad input as it stands; nil stays nil.
func AsInput(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// PrivilegeError is a refusal for lack of privilege: the same request
// would work for root (or with the capability the message names).
type PrivilegeError struct{ Err error }

func (e *PrivilegeError) Error() string { return e.Err.Error() }
func (e *PrivilegeError) Unwrap() error { return e.Err }

// Privilege is a PrivilegeError with a message formatted as by
// fmt.Errorf.
func Privilege(format string, args ...any) error {
	return &PrivilegeError{Err: fmt.Errorf(format, args...)}
}

// Namer spells an option's name for the one who reads a message: the
// library's own name, a flag (--rw), a spec's field (RW), a file's key.
type Namer func(option string) string

// A Mention is the message of bad input that names a second option
// beside the one at fault ("only applies with nodes"). Error names it as
// the library does; a front end that spells options its own way renders
// the message with Text.
type Mention struct{ text func(Namer) string }

// NewMention is the message text, spelled by whoever renders it.
func NewMention(text func(Namer) string) *Mention { return &Mention{text} }

func (m *Mention) Error() string { return m.text(func(option string) string { return option }) }

// Text is the message with each option it names spelled by name.
func (m *Mention) Text(name Namer) string { return m.text(name) }

// Mentions is an InputError of option whose message names other options
// (see Mention).
func Mentions(option string, text func(Namer) string) error {
	return &InputError{Option: option, Err: NewMention(text)}
}
