// Package cmdline parses the command line of a main in cmd/ whose options
// have kcp's shape (AddFlags, Complete, Validate), so that hammer, evidence
// and soak parse, refuse stray arguments and report errors the same way.
// It is not a command: `go build ./cmd/...` builds it and writes nothing.
package cmdline

import (
	"fmt"
	"io"

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
	if err := o.Complete(); err != nil {
		return err
	}
	return o.Validate()
}
