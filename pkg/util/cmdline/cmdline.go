// Package cmdline parses the command line of a main in cmd/ whose options
// have kcp's shape (AddFlags, Complete, Validate), so that hammer, evidence
// and soak parse, refuse stray arguments and report errors the same way.
package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Options are a command's options in kcp's shape.
type Options interface {
	// AddFlags binds the options to fs; the values they hold are the defaults.
	AddFlags(fs *pflag.FlagSet)
	// Complete derives what the flags leave open.
	Complete() error
	// Validate reports bad flags, naming them.
	Validate() error
}

// Parse parses args (without the program name) into o: AddFlags, parse,
// Complete, Validate. A positional argument is an error. --help prints
// usageHead (when not empty) and the flags to stderr and returns
// pflag.ErrHelp; every other error names the flag and is left to the caller
// to print.
func Parse(name string, o Options, args []string, usageHead string, stderr io.Writer) error {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	if usageHead != "" {
		fs.Usage = func() {
			fmt.Fprint(stderr, usageHead)
			fs.PrintDefaults()
		}
	}
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return Prepare(o)
}

// Prepare runs Complete, then Validate, on parsed options. Its error is a
// usage error, whichever of the two returned it: the commands that parse
// their flags elsewhere (carry's cobra subcommands) call it too, so that
// every command treats them alike.
func Prepare(o Options) error {
	if err := o.Complete(); err != nil {
		return err
	}
	return o.Validate()
}

// Runner is a parsed command: Run does the work and returns the exit code.
type Runner interface {
	Run(ctx context.Context, stdout, stderr io.Writer) int
}

// Exit ends the main of command name with what Parse returned: 0 for --help,
// usageCode with the error and a pointer to --help for any other parse error;
// otherwise it runs r until SIGINT or SIGTERM cancels its context, and exits
// with r's code.
func Exit(name string, r Runner, parseErr error, usageCode int) {
	os.Exit(run(name, r, parseErr, usageCode, os.Stdout, os.Stderr))
}

func run(name string, r Runner, parseErr error, usageCode int, stdout, stderr io.Writer) int {
	if errors.Is(parseErr, pflag.ErrHelp) {
		return 0
	}
	if parseErr != nil {
		fmt.Fprintf(stderr, "%s: %v\n(see %s --help)\n", name, parseErr, name)
		return usageCode
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return r.Run(ctx, stdout, stderr)
}

// ListVar binds a comma-separated list flag to p, with value as the
// default: each item trimmed, empty items dropped; the flag may be repeated,
// and the first time it is given replaces the default. Every command's
// comma-separated flags parse through it.
func ListVar(fs *pflag.FlagSet, p *[]string, name string, value []string, usage string) {
	*p = value
	fs.Var(&list{p: p}, name, usage)
}

type list struct {
	p   *[]string
	set bool
}

func (l *list) String() string { return strings.Join(*l.p, ",") }
func (l *list) Type() string   { return "strings" }

func (l *list) Set(v string) error {
	if !l.set {
		*l.p, l.set = nil, true
	}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.p = append(*l.p, item)
		}
	}
	return nil
}
