package main

// The `carry` command line: a table of subcommands, each parsing its own
// flags with the standard flag package.
//
// Exit codes: 0 success, 1 a check or operation failed, 2 usage error.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Commands is the subcommand table. New subcommands (build, verify,
// export, ...) are added here, each in its own file.
func Commands() []Command {
	return []Command{
		{Name: "pins", Summary: "check (or --write) go.mod's kcp pin block against kcp's go.mod", Run: runPins},
		{Name: "overlay", Summary: "build .overlay/ from verified fork zips and staging-patches/, and point go.work at it", Run: runOverlay},
		{Name: "refresh", Summary: "fold edits made in .overlay/<module> back into the carry's patches", Run: runRefresh},
		{Name: "verify", Summary: "run the carry's tests with the series (must pass, -race) and on the pristine fork (must fail)", Run: runVerify},
		{Name: "build", Summary: "link kcp's servers against the overlay into bin/ (module mode, or --kcp-source DIR)", Run: runBuild},
		{Name: "image", Summary: "layer the carry's kcp binaries onto kcp's release image, per platform (--push REF or --out DIR)", Run: runImage},
		{Name: "scrub", Summary: "find (dry run) or --apply remove the kcp.io/original-api-version: \"\" a pristine kcp stored, across all logical clusters", Run: runScrub},
		{Name: "export", Summary: "write the carry as a format-patch series with fork paths plus PR.md for github.com/kcp-dev/kubernetes", Run: runExport},
	}
}

// Main runs the carry command line and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmds := Commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout, cmds)
		return ExitOK
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c.Run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "carry: unknown command %q\n", args[0])
	usage(stderr, cmds)
	return ExitUsage
}

func usage(w io.Writer, cmds []Command) {
	fmt.Fprintln(w, "usage: carry <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-18s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `carry <command> -h` for the command's flags. Exit status: 0 ok, 1 failed, 2 usage error.")
}

// flagSet is a subcommand's flags plus the ones every command has.
type flagSet struct {
	*flag.FlagSet
	root string
	json bool
}

// newFlagSet creates the flags of subcommand name; synopsis is the usage line.
func newFlagSet(name, synopsis string, stderr io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("carry "+name, flag.ContinueOnError)}
	fs.SetOutput(stderr)
	fs.StringVar(&fs.root, "root", "", "repository root (default: the directory upward from the working directory whose go.mod is module "+reporoot.ModulePath+")")
	fs.BoolVar(&fs.json, "json", false, "print the result as JSON on stdout")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: carry %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; done is true when the command must return code
// (help requested, bad flags or unexpected arguments).
func (fs *flagSet) parse(args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, true
		}
		return ExitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		fs.Usage()
		return ExitUsage, true
	}
	return 0, false
}

// repoRoot returns --root, or else the nearest directory upward from the
// working directory whose go.mod declares reporoot.ModulePath.
func (fs *flagSet) repoRoot() (string, error) {
	if fs.root != "" {
		return filepath.Abs(fs.root)
	}
	root, err := reporoot.Find(".")
	if err != nil {
		return "", fmt.Errorf("%w; use --root", err)
	}
	return root, nil
}

// fail reports err for command name and returns ExitFail.
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "carry %s: %v\n", name, err)
	return ExitFail
}

// failBuild is fail for the commands that build kcp (build, image): a module
// this machine cannot fetch exits with ExitUnfetchable, which make reads as
// "not on this machine".
func failBuild(stderr io.Writer, name string, err error) int {
	code := fail(stderr, name, err)
	var unfetchable *kcpbuild.UnfetchableError
	if errors.As(err, &unfetchable) {
		return ExitUnfetchable
	}
	return code
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
