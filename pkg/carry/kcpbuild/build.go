// Package kcpbuild links kcp's servers against the patched fork modules of the
// overlay: either the kcp release pinned in go.mod, fetched from the module
// proxy (module mode), or a kcp git checkout of any version (source mode).
package kcpbuild

import (
	"cmp"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
	"github.com/kcp-carry/kcp-carry/pkg/util/goprogress"
)

// DefaultCommands are the kcp servers a sharded deployment runs; all link the
// same fork, so all carry the fix.
var DefaultCommands = []string{"cmd/kcp", "cmd/cache-server", "cmd/kcp-front-proxy", "cmd/virtual-workspaces"}

const kcpModule = "github.com/kcp-dev/kcp"

// Options configures Build. Carry (or Root, to load it) is required.
type Options struct {
	// Carry is the carry to build with; nil loads the carry of Root.
	Carry *carryset.Carry
	// Root is the kcp-carry repository (go.mod with the pins, the carry).
	Root string
	// KCPSource is a kcp git checkout to build (source mode). Empty builds the
	// kcp release required by Root/go.mod from the module proxy (module mode).
	KCPSource string
	// Commands are kcp main packages relative to kcp's module root. Default
	// DefaultCommands; in source mode those missing from the checkout are
	// skipped.
	Commands []string
	// Replaces supplies local copies of modules the build cannot fetch:
	// module path -> directory holding that module.
	Replaces map[string]string
	// OutDir receives the binaries. Default Root/bin, or Root/bin/GOOS_GOARCH
	// when GOOS or GOARCH is set.
	OutDir string
	// GOOS and GOARCH cross-compile for another platform (CGO off). Empty
	// means the go command's default. Refused with Race.
	GOOS, GOARCH string
	// Race builds with the race detector: -race, cgo on (a C compiler, the
	// one `go env CC` names, must be installed), linked dynamically for this
	// machine, stamped "-race" at the end of the gitVersion. The default
	// OutDir is then Root/bin/race, so race binaries never replace bin/kcp.
	Race bool
	// Progress receives a line per step and the go command's output. nil discards.
	Progress io.Writer
	// Now is the build date stamped in; zero means time.Now.
	Now time.Time
	// Pristine builds the same kcp with the same ldflags but without the
	// carry: the carried modules stay at the fork pin. The binaries are named
	// <command>-pristine and their version ends in -pristine; their build
	// info must show the pinned fork, not an overlay directory.
	Pristine bool
	// KCPVersion is the kcp version stamped into a source-mode build of a
	// tree without git metadata (an archive). Empty derives it from the tree:
	// Root's go.mod's kcp release when the tree is exactly its module source,
	// else the commit of a kcp-<commit> directory (treeVersion).
	KCPVersion string
	// Without leaves patches of the carry out (carryset.Carry.Without: a
	// file name or a number): the binaries are named
	// <command>-without-<numbers> and link an overlay of their own under
	// .build/, never .overlay/ or go.work. Refused with Pristine.
	Without []string
}

// Result says what was built.
type Result struct {
	Mode       string            `json:"mode"`
	KCPVersion string            `json:"kcpVersion"`
	GitVersion string            `json:"gitVersion"`
	Binaries   []string          `json:"binaries"`
	Overlay    map[string]string `json:"overlay"` // carried module -> directory the binaries were linked from
	// Pristine is set for a --pristine build; Overlay is empty then and
	// Pins names the fork versions the binaries were checked to link.
	Pristine bool                      `json:"pristine,omitempty"`
	Pins     map[string]module.Version `json:"pins,omitempty"`
	// Race is set for a --race build; its binaries' build info shows -race=true.
	Race bool `json:"race,omitempty"`
	// Without names the patches a --without build left out, as
	// <module>/<file name>.
	Without []string `json:"without,omitempty"`
}

// binarySuffix is appended to each binary's name: a pristine build sits next
// to the patched one in the same directory.
func (o Options) binarySuffix() string {
	if o.Pristine {
		return "-pristine"
	}
	if o.Carry != nil && len(o.Carry.LeftOut) > 0 {
		return "-without-" + strings.Join(o.Carry.LeftOutNumbers(), "-")
	}
	return ""
}

// partialCarry is true for a --without build: its overlay is its own.
func (o Options) partialCarry() bool { return o.Carry != nil && len(o.Carry.LeftOut) > 0 }

// Build links the kcp servers with the carry applied.
func Build(ctx context.Context, opts Options) (*Result, error) {
	if opts.Race {
		// Before anything is loaded or fetched: a machine without a C
		// compiler cannot build with the race detector at all.
		pre := &builder{opts: opts, log: opts.Progress}
		if pre.log == nil {
			pre.log = io.Discard
		}
		if err := pre.checkCCompiler(ctx); err != nil {
			return nil, err
		}
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	b := &builder{opts: o, log: o.Progress}
	if o.KCPSource != "" {
		return b.sourceMode(ctx)
	}
	return b.moduleMode(ctx)
}

func (o Options) resolve() (Options, error) {
	var err error
	// The flags first: a refusal needs no carry.
	if o.Race && ((o.GOOS != "" && o.GOOS != runtime.GOOS) || (o.GOARCH != "" && o.GOARCH != runtime.GOARCH)) {
		return o, fmt.Errorf("--race: cannot cross-compile for %s/%s: the race detector needs cgo and a C toolchain for the target; build --race on a %s/%s machine", cmp.Or(o.GOOS, runtime.GOOS), cmp.Or(o.GOARCH, runtime.GOARCH), cmp.Or(o.GOOS, runtime.GOOS), cmp.Or(o.GOARCH, runtime.GOARCH))
	}
	if o.Pristine && len(o.Without) > 0 {
		return o, fmt.Errorf("--without %s with --pristine: a pristine build has no patch to leave out", strings.Join(o.Without, ", "))
	}
	if o.Carry == nil {
		if o.Root == "" {
			return o, fmt.Errorf("kcpbuild: Options.Carry or Options.Root is required")
		}
		if o.Carry, err = carryset.Load(o.Root); err != nil {
			return o, err
		}
	}
	if o.Carry, err = o.Carry.Without(o.Without); err != nil {
		return o, err
	}
	o.Root = o.Carry.Root
	if o.OutDir == "" {
		o.OutDir = o.defaultOutDir()
	}
	if o.OutDir, err = filepath.Abs(o.OutDir); err != nil {
		return o, err
	}
	if len(o.Commands) == 0 {
		o.Commands = DefaultCommands
	}
	for _, c := range o.Commands {
		if !strings.HasPrefix(c, "cmd/") || strings.Contains(c, "..") {
			return o, fmt.Errorf("--cmd %q: want a kcp main package such as cmd/kcp", c)
		}
	}
	for mod, dir := range o.Replaces {
		if err := checkReplaceDir(mod, dir); err != nil {
			return o, err
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return o, err
		}
		o.Replaces[mod] = abs
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o, nil
}

// checkReplaceDir makes sure a --replace directory holds the module it claims
// to, so a typo fails here rather than deep inside the go command.
func checkReplaceDir(mod, dir string) error {
	if err := module.CheckPath(mod); err != nil {
		return fmt.Errorf("--replace %s=%s: %w", mod, dir, err)
	}
	f, err := pins.ReadGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("--replace %s=%s: %w", mod, dir, err)
	}
	if f.Module == nil || f.Module.Mod.Path != mod {
		return fmt.Errorf("--replace %s=%s: %s/go.mod declares another module path", mod, dir, dir)
	}
	return nil
}

type builder struct {
	opts Options
	log  io.Writer
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "carry build: "+format+"\n", args...)
}

// goEnv is the environment of every go command of the build: static binaries
// like kcp's release builds, and GOWORK chosen by the caller.
func (b *builder) goEnv(gowork string, extraGoFlags string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOWORK=") || strings.HasPrefix(kv, "CGO_ENABLED=") || strings.HasPrefix(kv, "GOFLAGS=")
	})
	goflags := strings.TrimSpace(os.Getenv("GOFLAGS") + " " + extraGoFlags)
	cgo := "0"
	if b.opts.Race {
		cgo = "1" // the race runtime is linked through cgo
	}
	env = append(env, "GOWORK="+gowork, "CGO_ENABLED="+cgo, "GOFLAGS="+goflags)
	return append(env, b.opts.platformEnv()...)
}

// buildFlags are the go command's flags for every package of the build.
// -trimpath keeps the directories of the kcp tree and the overlay out of the
// build cache's keys (and the binaries), so a build from another extraction
// or clone of the same sources is served from the cache.
func (b *builder) buildFlags() []string {
	flags := []string{"-trimpath"}
	if b.opts.Race {
		flags = append(flags, "-race")
	}
	return flags
}

// testOnly is true for the builds only tests run: the stock kcp (the
// positive control) and the race builds. The carried build keeps what kcp's
// own Makefile links in.
func (b *builder) testOnly() bool { return b.opts.Pristine || b.opts.Race }

// variant names the build in progress lines.
func (b *builder) variant() string {
	v := "carried"
	if b.opts.Pristine {
		v = "stock"
	}
	if b.opts.Race {
		v += ", -race"
	}
	return v
}

// goBuild builds the commands of the kcp module into a temporary directory and
// moves them into OutDir only when all of them linked and show the overlay,
// so a failed build leaves the previous binaries in place.
func (b *builder) goBuild(ctx context.Context, run runner, dir string, pkgs []string, ldflags string, check func(binary string) error) ([]string, error) {
	if err := os.MkdirAll(b.opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(b.opts.OutDir, ".carry-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	flags := b.buildFlags()
	if b.testOnly() {
		// No DWARF in binaries only tests run: a smaller, faster link. The
		// race detector symbolizes its reports without it.
		ldflags = strings.TrimSpace(ldflags + " -w")
	}
	args := append([]string{"build", "-v", "-ldflags", ldflags, "-o", tmp + string(os.PathSeparator)}, flags...)
	args = append(args, pkgs...)
	label := fmt.Sprintf("carry build: go build %s (%s)", strings.Join(pkgs, " "), b.variant())
	b.logf("go list -deps: which packages the build cache lacks")
	stale, err := goprogress.Stale(ctx, dir, run.env, flags, pkgs, b.log)
	if err != nil {
		return nil, err
	}
	meter := goprogress.NewMeter(label, b.log, stale)
	meter.Start()
	err = runner{env: run.env, stderr: meter}.goCmd(ctx, dir, b.log, args...)
	meter.Stop(err)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	if len(entries) != len(pkgs) {
		return nil, fmt.Errorf("go build produced %d binaries for %d packages", len(entries), len(pkgs))
	}
	for _, e := range entries {
		bin := filepath.Join(tmp, e.Name())
		if err := check(bin); err != nil {
			return nil, err
		}
		race, err := RaceBuild(bin)
		if err != nil {
			return nil, err
		}
		if race != b.opts.Race {
			return nil, fmt.Errorf("%s: build info says -race=%t, want %t", e.Name(), race, b.opts.Race)
		}
	}
	var out []string
	for _, e := range entries {
		dst := filepath.Join(b.opts.OutDir, e.Name()+b.opts.binarySuffix())
		if err := os.Rename(filepath.Join(tmp, e.Name()), dst); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	sort.Strings(out)
	return out, nil
}

// checkOverlayLinked reads a binary's build info (what `go version -m` prints)
// and makes sure each carried module was replaced by its overlay directory.
func checkOverlayLinked(binary string, overlayDirs map[string]string) error {
	return checkLinked(binary, overlayDirs, func(dir string, r *debug.Module) string {
		if r != nil && filepath.Clean(r.Path) == filepath.Clean(dir) {
			return ""
		}
		return "the overlay " + dir
	})
}

// checkPristineLinked makes sure each carried module the binary links comes
// from its fork pin (a module version), never from a directory: proof that
// no overlay went into a pristine build.
func checkPristineLinked(binary string, pins map[string]module.Version) error {
	return checkLinked(binary, pins, func(pin module.Version, r *debug.Module) string {
		if r != nil && r.Path == pin.Path && r.Version == pin.Version {
			return ""
		}
		return "the pristine fork " + pin.Path + "@" + pin.Version
	})
}

// checkLinked reads a binary's build info and checks the replacement of
// each module of want it links (a module it does not link is skipped):
// wrong returns what the module should have come from, or "" when r is it.
func checkLinked[W any](binary string, want map[string]W, wrong func(W, *debug.Module) string) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("reading build info of %s: %w", binary, err)
	}
	for mod, w := range want {
		dep := findDep(info, mod)
		if dep == nil {
			continue
		}
		if from := wrong(w, dep.Replace); from != "" {
			got := "no replacement"
			if dep.Replace != nil {
				got = strings.TrimSuffix(dep.Replace.Path+"@"+dep.Replace.Version, "@")
			}
			return fmt.Errorf("%s links %s from %s, not from %s", binary, mod, got, from)
		}
	}
	return nil
}

// Variant says whether a kcp binary links the carry: "patched" when a carried
// module is replaced by a directory (the overlay), "pristine" when it comes
// from a module version, and an error when the binary links none of mods.
func Variant(binary string, mods []string) (string, error) {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("reading build info of %s: %w", binary, err)
	}
	for _, mod := range mods {
		dep := findDep(info, mod)
		if dep == nil {
			continue
		}
		if dep.Replace != nil && modfile.IsDirectoryPath(dep.Replace.Path) {
			return "patched", nil
		}
		return "pristine", nil
	}
	return "", fmt.Errorf("%s links none of %s", binary, strings.Join(mods, ", "))
}

func findDep(info *buildinfo.BuildInfo, path string) *debug.Module {
	for _, d := range info.Deps {
		if d.Path == path {
			return d
		}
	}
	return nil
}

// CCompilerError says that a race build has no C compiler to link with.
type CCompilerError struct {
	CC  string // what `go env CC` resolves to
	Err error
}

func (e *CCompilerError) Error() string {
	return fmt.Sprintf("--race needs a C compiler (the race detector links through cgo): `go env CC` is %q, which is not installed (%v); install it (e.g. apt-get install gcc) or set CC to one that is", e.CC, e.Err)
}

func (e *CCompilerError) Unwrap() error { return e.Err }

// checkCCompiler makes sure the C compiler the go command would use for a cgo
// build (`go env CC`, with the build's environment) exists, before an
// expensive build fails late with cgo's own message.
func (b *builder) checkCCompiler(ctx context.Context) error {
	var out strings.Builder
	run := runner{env: b.goEnv("off", ""), stderr: b.log}
	if err := run.goCmd(ctx, b.opts.Root, &out, "env", "CC"); err != nil {
		return fmt.Errorf("--race: go env CC: %w", err)
	}
	cc := strings.TrimSpace(out.String())
	fields := strings.Fields(cc)
	if len(fields) == 0 {
		return &CCompilerError{CC: cc, Err: fmt.Errorf("empty")}
	}
	if _, err := exec.LookPath(fields[0]); err != nil {
		return &CCompilerError{CC: cc, Err: err}
	}
	return nil
}

// RaceBuild reads a binary's build info: whether it was built with -race
// (`go version -m` shows "build -race=true").
func RaceBuild(binary string) (bool, error) {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return false, fmt.Errorf("reading build info of %s: %w", binary, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true", nil
		}
	}
	return false, nil
}
