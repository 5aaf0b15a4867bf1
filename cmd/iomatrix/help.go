package main

import (
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/fault"
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

// strictArgs makes every command of the tree under cmd refuse a wrong
// number of arguments as bad input (exit status 2, one line): a group
// (cobra's completion too) refuses words that name none of its
// subcommands instead of showing its help with exit status 0, and the
// refusal of any other command's argument check, cobra's own validators
// included, whose errors are plain (exit status 1), is bad input.
func strictArgs(cmd *cobra.Command) {
	subs := slices.DeleteFunc(slices.Clone(cmd.Commands()), func(c *cobra.Command) bool { return c.Name() == "help" })
	switch {
	case len(subs) > 0:
		cmd.Args = unknownCommand
		if !cmd.Runnable() {
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	case cmd.Args != nil:
		cmd.Args = usageArgs(cmd.Args)
	}
	for _, c := range subs {
		strictArgs(c)
	}
}

// usageArgs is args with its refusal as bad input, worded with the
// command's usage line where it is not already.
func usageArgs(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		err := args(cmd, a)
		if err == nil || errors.As(err, new(*fault.InputError)) {
			return err
		}
		if !strings.Contains(err.Error(), cmd.CommandPath()) {
			err = fmt.Errorf("%s: %w", cmd.CommandPath(), err)
		}
		return usagef("%w (usage: %s)", err, cmd.UseLine())
	}
}

// maxArgs is cobra.MaximumNArgs with a usage error.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) <= n:
			return nil
		case n == 0:
			return usagef("%s takes no argument, got %q", commandName(cmd), args)
		}
		return usagef("%s takes at most %d argument(s)%s, got %d: %q", commandName(cmd), n, argNames(cmd), len(args), args)
	}
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s)%s, got %d: see --help", commandName(cmd), n, argNames(cmd), len(args))
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with a usage error that says what is
// missing (what: "at least one results file").
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s needs %s%s, got %d: see --help", commandName(cmd), what, argNames(cmd), len(args))
		}
		return nil
	}
}

// argNames are the arguments of cmd as its usage line names them
// (" (BASE.json NEW.json)"): the words of Use after the command's name,
// up to the first flag or alternative; "" when it names none.
func argNames(cmd *cobra.Command) string {
	words := strings.Fields(cmd.Use)
	var names []string
	for _, w := range words[min(1, len(words)):] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || strings.HasPrefix(w, "[-") {
			break
		}
		names = append(names, w)
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, " ") + ")"
}
