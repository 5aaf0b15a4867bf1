package main

import (
	"embed"
	"strings"
)

// The long help of each command is prose in help/NAME.txt (NAME is the
// command's path below iomatrix, joined by '-': cap-verify), where it can
// be written and reviewed as text; the man pages in docs/man are made
// from it. A line {{exit status}} stands for exitStatusHelp.
//
//go:embed help/*.txt
var helpFiles embed.FS

// longHelp is the long help of the command NAME. A missing file is a
// defect of the build, caught by every test that builds the command
// tree.
func longHelp(name string) string {
	return strings.ReplaceAll(readHelp(name), "{{exit status}}", exitStatusHelp)
}

func readHelp(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("iomatrix: no help text for " + name + ": " + err.Error())
	}
	return strings.TrimSuffix(string(b), "\n")
}
