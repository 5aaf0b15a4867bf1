package main

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
)

// A library names the option at fault in its own terms (fault.InputError,
// pattern.FieldError) and names other options it mentions through a
// fault.Mention; the command line spells each as the flag that sets it,
// once, as runMain prints the error, and maps the error's kind to the
// exit status (exitCode).

// usagef is bad input (exit status 2), worded in the flags' terms.
func usagef(format string, args ...any) error { return fault.Input("", format, args...) }

// flagNames maps pattern fields to the flags that set them, so errors name
// what the user typed.
var flagNames = map[string]string{
	"access": "--rw", "block_size": "--bs", "read_pct": "--rwmix", "queue_depth": "--qd",
	"jobs": "--jobs", "runtime": "--runtime", "ramp": "--ramp", "engine": "--engine", "size": "--size",
	"min-runtime": "--min-runtime", "max-runtime": "--max-runtime", "precision": "--precision",
	"rate": "--rate", "arrival": "--arrival", "speed": "--speed", "sync": "--sync",
	"bssplit": "--bssplit", "random_distribution": "--random-distribution",
	"lat_log": "--lat-log", "lat_log_avg": "--lat-log-avg", "response_log": "--response-log",
	"compress_pct": "--compress", "dedupe_pct": "--dedupe",
	"poll": "--poll", "sqpoll": "--sqpoll", "sqpoll-idle": "--sqpoll-idle", "sqpoll-cpu": "--sqpoll-cpu",
}

// flagError words a library's bad input as the flag at fault: a pattern's
// or the engine's field (flagNames), or the option of an InputError.
func flagError(err error) error {
	var fe *pattern.FieldError
	if _, named := err.(*fault.InputError); !named && errors.As(err, &fe) {
		if name, ok := flagNames[fe.Field]; ok {
			return usagef("%s: %s", name, fe.Text(flagName))
		}
	}
	return optionError(err)
}

// flagName spells a library's option as the flag that sets it.
func flagName(option string) string {
	if name, ok := flagNames[option]; ok {
		return name
	}
	return "--" + option
}

// optionError puts a library's bad input in the terms of the command
// line: the option it names becomes the flag that set it.
func optionError(err error) error {
	ie, ok := err.(*fault.InputError)
	if !ok || ie.Option == "" {
		return err
	}
	return fault.AsInput(fmt.Errorf("%s: %w", flagName(ie.Option), ie.Err))
}

// message is err's text for the user: where a library's message names
// options (a fault.Mention in it), they are spelled as the flags that
// set them.
func message(err error) string {
	msg := err.Error()
	var m *fault.Mention
	if errors.As(err, &m) {
		if own := m.Error(); strings.Contains(msg, own) {
			i := strings.LastIndex(msg, own)
			msg = msg[:i] + m.Text(flagName) + msg[i+len(own):]
		}
	}
	return msg
}

// exitKinds name the exit statuses in a JSON error.
var exitKinds = map[int]string{exitFailure: "failure", exitUsage: "usage", exitInconclusive: "inconclusive", exitPrivilege: "privilege"}

func exitKind(code int) string {
	if k, ok := exitKinds[code]; ok {
		return k
	}
	if code > 128 {
		return "interrupted"
	}
	return "error"
}

func exitCode(err error) int {
	var fe *pattern.FieldError
	var ce *commandError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &fe), errors.As(err, new(*fault.InputError)),
		errors.Is(err, target.ErrBadTarget), errors.Is(err, units.ErrBadSize), errors.Is(err, pattern.ErrBadPattern),
		errors.Is(err, iotest.ErrNoUring):
		return exitUsage
	case errors.As(err, new(*fault.PrivilegeError)), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return exitPrivilege
	}
	return exitFailure
}
