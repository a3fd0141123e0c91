package main

// The `carry` command line: a cobra root with one subcommand per file, each
// an options struct in kcp's shape (NewOptions, AddFlags, Complete, Validate,
// Run) on pflag. Exit statuses: exit.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// subcommand is what every carry subcommand's options implement: kcp's
// shape, as every main's (cmdline.Options: AddFlags, Complete, Validate),
// and a Run that does the work and returns the exit code, having reported
// any failure on stderr.
type subcommand interface {
	cmdline.Options
	cmdline.Runner
}

// NewCommand returns the carry command with its subcommands. New
// subcommands (build, verify, export, ...) are added here, each in its own
// file.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "carry",
		Short: "carry kcp-carry's patches on kcp's Kubernetes fork",
		Long: "carry manages kcp-carry's patches on kcp's Kubernetes fork: pins, the patched-module overlay,\n" +
			"patch refresh, kcp builds and images, the positive control and the upstream export.\n\n" +
			"Run `carry <command> --help` for the command's flags.\n\n" + exitTable(""),
		// Silenced: Main reports errors and usage itself, with exit codes.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return errNoCommand },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	if displayName != "" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: displayName}
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	add := func(name, use, short, long string, o subcommand) {
		root.AddCommand(newSubcommand(name, use, short, long, o, stdout, stderr))
	}
	add("pins", "pins [--write | --kcp-source DIR] [--json] [--root DIR]",
		"check (or --write) go.mod's kcp pin block against kcp's go.mod", "", NewPinsOptions())
	add("overlay", "overlay [--force] [--json] [--root DIR]",
		"build .overlay/ from verified fork zips and staging-patches/, and point go.work at it", "", NewOverlayOptions())
	add("refresh", `refresh [--module PATH] [--new NNNN-name.patch --subject "UPSTREAM: <carry>: ..."] [--json] [--root DIR]`,
		"fold edits made in .overlay/<module> back into the carry's patches", "", NewRefreshOptions())
	add("verify", "verify [--json] [--root DIR]",
		"run the carry's tests with the series (must pass, -race) and on the pristine fork (must fail)", "", NewVerifyOptions())
	add("build", "build [--kcp-source DIR [--kcp-version V]] [--pristine | --without PATCH ...] [--cmd cmd/kcp ...] [--replace MODULE=DIR ...] [--out DIR] [--json] [--root DIR]",
		"link kcp's servers against the overlay into bin/ (module mode, or --kcp-source DIR)", "", NewBuildOptions())
	add("image", "image (--push REF | --out DIR) [--base REF | --base oci:DIR] [--platform linux/amd64,linux/arm64] [--kcp-source DIR] [--replace MODULE=DIR ...] [--bin-dir DIR] [--json] [--root DIR]",
		"layer the carry's kcp binaries onto kcp's release image, per platform (--push REF or --out DIR)", "", NewImageOptions())
	add("scrub", "scrub [--kubeconfig FILE] [--context NAME] [--server URL (--token T | --client-certificate FILE --client-key FILE) --certificate-authority FILE] [--as USER] [--workspaces root,root:org] [--resources configmaps,...] [--apply [--force]] [--list] [--json]",
		`find (dry run) or --apply remove the kcp.io/original-api-version: "" a pristine kcp stored, across all logical clusters`, scrubLong(), NewScrubOptions())
	add("presubmit", "presubmit [--kcp-source DIR] [--kcp-release-source DIR] [--only NAME ...] [--e2e] [--json] [--root DIR]",
		"run every pull request's presubmit as its upstream's CI would, and print one table", presubmitLong, NewPresubmitOptions())
	add("export", "export --out DIR --base-branch BRANCH [--author \"Name <email>\"] [--signoff] [--fork-pr N] [--fork-version V [--fork-version-includes NAME ...]] [--force] [--verify-report FILE | --no-verify] [--presubmit-report FILE [--allow-red]] [--kcp-source DIR ...] [--json] [--root DIR]",
		"write the pull requests: the fork's patch series and PR.md, and one directory per kcp pull request", exportLong, NewExportOptions())
	return root
}

// newSubcommand wires options o into a cobra command: flags, then Complete,
// Validate and Run. An error from Complete or Validate is a usage error
// (ExitUsage, with the usage), as in pkg/util/cmdline. A command with exit
// statuses of its own shows its rows of the table in its --help.
func newSubcommand(name, use, short, long string, o subcommand, stdout, stderr io.Writer) *cobra.Command {
	if hasOwnExitStatus(name) {
		if long == "" {
			long = short + "."
		}
		long += "\n\n" + exitTable(name)
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		// The use line lists the flags already.
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments: %s", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmdline.Prepare(o); err != nil {
				return err
			}
			if code := o.Run(cmd.Context(), stdout, stderr); code != ExitOK {
				return exitCode(code)
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// exitCode is a subcommand's non-zero exit status, its failure already
// reported.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// displayName is how help names the root command when it is not "carry":
// "kubectl carry" when kubectl runs this binary as its plugin kubectl-carry.
var displayName string

// errNoCommand is `carry` alone: usage, exit status ExitUsage.
var errNoCommand = errors.New("no command given")

// Main runs the carry command line and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := NewCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	// Anything else is a bad command line: an unknown command or flag, a
	// flag's bad value, unexpected arguments, or a refusal from Complete or
	// Validate.
	if !errors.Is(err, errNoCommand) {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	}
	fmt.Fprint(stderr, cmd.UsageString())
	return ExitUsage
}

// commonOptions are the flags every subcommand that reads the repository
// has.
type commonOptions struct {
	root string
	json bool
}

// AddFlags binds --root and --json to fs.
func (o *commonOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.root, "root", "", "repository root (default: the directory upward from the working directory whose go.mod is module "+reporoot.ModulePath+")")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON on stdout")
}

// Complete has nothing to derive: --root is resolved when the command runs
// (repoRoot), so that a usage error is reported before a missing repository.
func (o *commonOptions) Complete() error { return nil }

// Validate accepts every --root and --json.
func (o *commonOptions) Validate() error { return nil }

// repoRoot returns --root, or else the nearest directory upward from the
// working directory whose go.mod declares reporoot.ModulePath.
func (o *commonOptions) repoRoot() (string, error) {
	if o.root != "" {
		return filepath.Abs(o.root)
	}
	root, err := reporoot.Find(".")
	if err != nil {
		return "", fmt.Errorf("%w; use --root", err)
	}
	return root, nil
}

// fail reports err for command name and returns ExitFail, or
// ExitUnfetchable for a module this machine cannot fetch (carry build and
// image), which make reads as "not on this machine".
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "carry %s: %v\n", name, err)
	var unfetchable *kcpbuild.UnfetchableError
	if errors.As(err, &unfetchable) {
		return ExitUnfetchable
	}
	return ExitFail
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
