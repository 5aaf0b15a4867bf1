package main

import (
	"embed"
	"strings"

	"github.com/spf13/cobra"
)

// The long help of each command is prose in help/NAME.txt (NAME is the
// command's path below iomatrix, joined by '-': cap-verify), where it can
// be written and reviewed as text; the man pages in docs/man are made
// from it. A line {{exit status}} stands for exitStatusHelp; the lines
// after a line {{examples}} are the command's examples.
//
//go:embed help/*.txt
var helpFiles embed.FS

// longHelp is the long help of the command NAME. A missing file is a
// defect of the build, caught by every test that builds the command
// tree.
func longHelp(name string) string {
	long, _, _ := strings.Cut(readHelp(name), "\n{{examples}}\n")
	return strings.ReplaceAll(long, "{{exit status}}", exitStatusHelp)
}

// examples are the examples of the command NAME, from its help file.
func examples(name string) string {
	_, ex, _ := strings.Cut(readHelp(name), "\n{{examples}}\n")
	return ex
}

func readHelp(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("iomatrix: no help text for " + name + ": " + err.Error())
	}
	return strings.TrimSuffix(string(b), "\n")
}

// command is a command whose long help and examples are those of
// help/NAME.txt.
func command(name, use, short string, args cobra.PositionalArgs, run func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: longHelp(name), Example: examples(name), Args: args, RunE: run}
}

// group is a command of subcommands: without one it shows its help, and
// it refuses words that name none of them.
func group(name, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := command(name, name, short, unknownCommand, func(cmd *cobra.Command, _ []string) error { return cmd.Help() })
	cmd.AddCommand(subs...)
	return cmd
}
