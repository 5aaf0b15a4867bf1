// Package profiles holds named sets of patterns (the 137-pattern full sweep
// and smaller ones) as embedded YAML, and loads user profiles of the same
// form.
package profiles
