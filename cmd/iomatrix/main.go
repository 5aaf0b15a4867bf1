// Command iomatrix characterizes disk IOPS with O_DIRECT I/O.
//
// It is the wiring of the packages that do the work: each command's file
// (cmd_NAME.go) declares its flags, with its help in help/NAME.txt,
// calls into the package the command names, renders what comes back and
// returns the error, if any; errors.go words a library's bad input as the
// flag at fault and maps every error to its exit status.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// Exit statuses. They are part of the interface: scripts test them.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitInconclusive: a check could be neither passed nor failed on
	// the data (another process loaded the device while it measured, or
	// its I/O waited for a CPU long enough to explain its figure).
	exitInconclusive = 3
	exitPrivilege    = 4
	// exitBrokenPipe is 128 + SIGPIPE: standard output was closed.
	exitBrokenPipe = 141
)

// exitStatusHelp is the exit status table that ends most commands' long
// help (help/exit-status.txt).
var exitStatusHelp = readHelp("exit-status")

// globalOptions are shared by every command.
type globalOptions struct {
	stdout, stderr io.Writer
	stderrTTY      bool
	stdoutTTY      bool
	// kube connects to a cluster (kubeClient; tests give a fake one), and
	// kubePoll is how often k8s commands look at it (0: 2s).
	kube     func(kubeOptions) (kubernetes.Interface, string, error)
	kubePoll time.Duration
	// sys is the running system's sysfs and procfs, made once here and
	// passed down; a command with --sysfs or --procfs makes its own.
	sys sysfs.FS
	// files are the running command's files, as checkFiles found them.
	files fileSet
}

// notice tells the user something on standard error.
func (g *globalOptions) notice(msg string) { fmt.Fprintf(g.stderr, "iomatrix: %s\n", msg) }

// defaultTarget is the file measured when no TARGET is given.
const defaultTarget = "iomatrix.dat"

// targetArg is the optional TARGET argument of a measuring command.
func targetArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return defaultTarget
}

// signalError carries the signal that interrupted a command.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + signalName(e.sig) }

// Signal is the signal, which a throttled command is passed on.
func (e signalError) Signal() os.Signal { return e.sig }

// signalName is SIGINT rather than Go's "interrupt".
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := unix.SignalName(s); name != "" {
			return name
		}
	}
	return sig.String()
}

func newRootCommand(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:           "iomatrix",
		Short:         "Characterize disk IOPS with O_DIRECT I/O",
		Long:          longHelp("iomatrix"),
		Version:       results.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Cobra's own refusal of an unknown command is a plain error
		// (exit status 1) over several lines; this one is bad input.
		Args:                       unknownCommand,
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2, // cobra's own default, which SuggestionsFor does not apply
		// Every command's files are held to the output rule before it
		// runs (files.go, outputs.go).
		PersistentPreRunE: checkFiles(g),
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.SetFlagErrorFunc(flagParseError)
	root.AddCommand(newRunCommand(g))
	root.AddCommand(newReplayCommand(g))
	root.AddCommand(newSweepCommand(g))
	root.AddCommand(newBurstCommand(g))
	root.AddCommand(newProfilesCommand(g))
	root.AddCommand(newReportCommand(g))
	root.AddCommand(newCompareCommand(g))
	root.AddCommand(newImportCommand(g))
	root.AddCommand(newMergeCommand(g))
	root.AddCommand(newK8sCommand(g))
	root.AddCommand(newFitCommand(g))
	root.AddCommand(newIsolateCommand(g))
	root.AddCommand(newCrosscheckCommand(g))
	root.AddCommand(newChildCommand(g))
	root.AddCommand(newCapCommand(g))
	root.AddCommand(newThrottleCommand(g))
	root.AddCommand(newObserveCommand(g))
	root.AddCommand(newIOCostCommand(g))
	root.AddCommand(newExecCommand())
	root.SetGlobalNormalizationFunc(fioNames)
	strictHelp(root)
	root.InitDefaultCompletionCmd()
	strictArgs(root)
	return root
}

// strictHelp makes `iomatrix help WORDS` refuse words that name no
// command, as the root does, instead of showing the nearest command's
// help with exit status 0. Cobra's help command keeps its completion
// and its rendering.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, help := range root.Commands() {
		if help.Name() != "help" || help.Run == nil {
			continue
		}
		show := help.Run
		help.RunE = func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return fault.AsInput(err)
			}
			if len(rest) > 0 {
				return unknownCommand(cmd, rest)
			}
			show(c, args)
			return nil
		}
	}
}

// unknownCommand refuses arguments that name no command of cmd, with
// cobra's suggestion when there is one.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = cmd.Root().SuggestionsMinimumDistance
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		return usagef("unknown command %q: did you mean %s? (see %s --help)", args[0], strings.Join(s, ", "), cmd.CommandPath())
	}
	return usagef("unknown command %q (see %s --help)", args[0], cmd.CommandPath())
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	out, errOut := &pipeWriter{w: stdout}, &pipeWriter{w: stderr}
	g := &globalOptions{stdout: out, stderr: errOut, stderrTTY: isTerminal(os.Stderr), stdoutTTY: isTerminal(os.Stdout), kube: kubeClient, sys: sysfs.Default()}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A reader that goes away (`iomatrix cap verify | head -1`) must not
	// kill iomatrix on its next write: the cgroup it created would stay
	// behind. With SIGPIPE caught, the write fails with EPIPE instead, the
	// command unwinds (removing its cgroup) and the exit status is the one
	// a shell expects of a process that a closed pipe ended, 141.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	go func() {
		if s, ok := <-sigs; ok {
			cancel(signalError{s})
		}
	}()

	root := newRootCommand(g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if out.broken.Load() || errors.Is(err, syscall.EPIPE) {
		return exitBrokenPipe // nobody reads what would explain it
	}
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return st.Code // a throttled command's own status
	}
	code, msg := exitCode(err), nameTyped(message(flagError(err)), typedSpellings(args))
	if se, ok := context.Cause(ctx).(signalError); ok && ctx.Err() != nil {
		// The signal's status; an error of its own (a file the command
		// still wrote after it) is said beside it, never hidden by it.
		if errors.Is(err, context.Canceled) || errors.As(err, new(signalError)) {
			msg = se.Error()
		} else {
			msg = se.Error() + "; then: " + msg
		}
		code = 128 + int(se.sig.(syscall.Signal))
	}
	if f := cmd.Flags().Lookup("format"); f != nil && f.Value.String() == "json" {
		// Machine output stays machine-readable, errors included.
		_ = json.NewEncoder(stderr).Encode(map[string]any{"error": msg, "exit_status": code, "kind": exitKind(code)}) // the exit status still says it
		return code
	}
	fmt.Fprintf(stderr, "iomatrix: %s\n", msg)
	return code
}

// pipeWriter remembers that a write failed because its reader went away.
type pipeWriter struct {
	w      io.Writer
	broken atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken.Store(true)
	}
	return n, err
}

// unwrapped is the writer under a pipeWriter: what a child process should
// inherit (an *os.File is handed over as is, where any other writer is
// fed through a pipe that the child's own children keep open).
func unwrapped(w io.Writer) io.Writer {
	if p, ok := w.(*pipeWriter); ok {
		return p.w
	}
	return w
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
