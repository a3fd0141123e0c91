package kcpbuild

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testkcp"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
)

func TestUnfetchableErrorNamesModuleAndRemedies(t *testing.T) {
	err := &UnfetchableError{
		Required:   "github.com/kcp-dev/virtual-workspace-framework",
		Fetched:    module.Version{Path: "github.com/kcp-dev/kcp/staging/src/github.com/kcp-dev/virtual-workspace-framework", Version: "v0.0.0-20260702132208-08be0a1c8de2"},
		Reason:     "403 Forbidden",
		KCPVersion: "v0.32.3",
	}
	msg := err.Error()
	testfs.ContainsAll(t, "message", msg,
		"module github.com/kcp-dev/virtual-workspace-framework (pinned to github.com/kcp-dev/kcp/staging/src/github.com/kcp-dev/virtual-workspace-framework@v0.0.0-20260702132208-08be0a1c8de2) cannot be fetched: 403 Forbidden",
		"carry build --kcp-source /path/to/kcp",
		"carry build --replace github.com/kcp-dev/virtual-workspace-framework=/path/to/its/source",
	)
}

// TestFindUnfetchable runs the real go command on a module whose replaced
// requirement cannot be downloaded, and checks that the module
// is reported by the path the importer requires.
func TestFindUnfetchable(t *testing.T) {
	dir := t.TempDir()
	testfs.WriteTree(t, dir, map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.26.0\n\nrequire example.com/missing v1.0.0\n\nreplace example.com/missing => example.com/missing-fork v1.0.0\n",
		"main.go": "package main\n\nimport _ \"example.com/missing/pkg\"\n\nfunc main() {}\n",
	})
	// An empty file:// proxy answers "not found" for every module, like a
	// proxy that does not serve the module.
	proxy := t.TempDir()
	run := runner{env: append(os.Environ(), "GOWORK=off", "GOPROXY=file://"+filepath.ToSlash(proxy), "GONOSUMDB=example.com", "GOFLAGS=-mod=mod", "GOMODCACHE="+t.TempDir())}
	replaces := map[module.Version]string{{Path: "example.com/missing-fork", Version: "v1.0.0"}: "example.com/missing"}
	got, err := findUnfetchable(context.Background(), run, dir, []string{"."}, replaces)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("no unfetchable module found")
	}
	if got.Required != "example.com/missing" || got.Fetched != (module.Version{Path: "example.com/missing-fork", Version: "v1.0.0"}) {
		t.Errorf("got required %s fetched %v, want example.com/missing fetched example.com/missing-fork@v1.0.0", got.Required, got.Fetched)
	}
}

func TestSourceModeRejectsNonCheckouts(t *testing.T) {
	root := testfs.RepoRoot(t)
	notKCP := t.TempDir()
	testfs.WriteTree(t, notKCP, map[string]string{"go.mod": "module example.com/other\n\ngo 1.26.0\n", "cmd/kcp/main.go": "package main\n"})
	noCmd := t.TempDir()
	testfs.WriteTree(t, noCmd, map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n\ngo 1.26.0\n"})
	for name, dir := range map[string]string{
		"missing":      filepath.Join(t.TempDir(), "nope"),
		"other module": notKCP,
		"no cmd/kcp":   noCmd,
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			_, err := Build(context.Background(), Options{Root: root, KCPSource: dir, OutDir: out})
			var srcErr *SourceError
			if !errors.As(err, &srcErr) {
				t.Fatalf("Build() error = %v, want a *SourceError", err)
			}
			if !strings.Contains(err.Error(), "--kcp-source "+dir) {
				t.Errorf("error does not name the flag and directory: %v", err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("output directory not empty after a refused build: %v", entries)
			}
		})
	}
}

// TestModuleModeNamesUnfetchableModule builds the pinned kcp release the way
// `carry build` does. On machines whose module proxy does not serve kcp's
// virtual-workspace-framework it must stop with the one clear message; where
// the whole graph is reachable it must link bin/kcp from the overlay.
func TestModuleModeNamesUnfetchableModule(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads kcp's module graph")
	}
	root := testfs.RepoRoot(t)
	out := t.TempDir()
	res, err := Build(context.Background(), Options{Root: root, OutDir: out, Commands: []string{"cmd/kcp"}, Progress: testWriter{t}})
	var unfetchable *UnfetchableError
	switch {
	case errors.As(err, &unfetchable):
		if unfetchable.Required != "github.com/kcp-dev/virtual-workspace-framework" {
			t.Errorf("unfetchable module = %s, want github.com/kcp-dev/virtual-workspace-framework", unfetchable.Required)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("output directory not empty after a failed build: %v", entries)
		}
	case err != nil:
		t.Fatalf("Build() failed without naming an unfetchable module: %v", err)
	default:
		t.Logf("the whole kcp graph was reachable; built %v", res.Binaries)
		checkGoVersionShowsOverlay(t, res.Binaries[0], res.Overlay)
	}
}

// TestSourceModeBuildsSyntheticCheckout builds a tree shaped like a kcp
// checkout and checks that the binary links the overlay (go version -m), runs
// the patched code, and carries kcp's version stamp with the carry mark. The
// same tree built with the pristine fork is the positive control.
func TestSourceModeBuildsSyntheticCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles k8s.io/apiserver")
	}
	root := testfs.RepoRoot(t)
	checkout := testkcp.Checkout(t, root, nil)
	out := t.TempDir()

	res, err := Build(context.Background(), Options{Root: root, KCPSource: checkout, OutDir: out, Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if diff := cmp.Diff([]string{filepath.Join(out, "kcp")}, res.Binaries); diff != "" {
		t.Errorf("binaries (-want +got):\n%s", diff)
	}
	bin := res.Binaries[0]
	checkGoVersionShowsOverlay(t, bin, res.Overlay)

	probe := runProbe(t, bin)
	if v := probe["gitVersion"]; !strings.HasPrefix(v, "v1.36.0+kcp-v0.99.0-carry-") {
		t.Errorf("gitVersion = %q, want v1.36.0+kcp-v0.99.0-carry-<id>", v)
	}
	if probe["sdk"] != "staging/src/github.com/kcp-dev/sdk" {
		t.Errorf("the checkout's local staging replace was not used: %v", probe)
	}

	// Positive control: the same checkout built with --pristine links the
	// fork at its pin, and the build info checks tell the two apart.
	pres, err := Build(context.Background(), Options{Root: root, KCPSource: checkout, OutDir: out, Progress: testWriter{t}, Pristine: true})
	if err != nil {
		t.Fatalf("Build(Pristine) = %v", err)
	}
	if diff := cmp.Diff([]string{filepath.Join(out, "kcp-pristine")}, pres.Binaries); diff != "" {
		t.Errorf("pristine binaries (-want +got):\n%s", diff)
	}
	pristine := pres.Binaries[0]
	if v := runProbe(t, pristine)["gitVersion"]; v != "v1.36.0+kcp-v0.99.0-pristine" {
		t.Errorf("pristine gitVersion = %q, want v1.36.0+kcp-v0.99.0-pristine", v)
	}
	if err := checkOverlayLinked(pristine, res.Overlay); err == nil {
		t.Errorf("the pristine build of the checkout passed the overlay check")
	}
	if err := checkPristineLinked(bin, pres.Pins); err == nil {
		t.Errorf("the patched build of the checkout passed the pristine check")
	}
	mods := []string{"k8s.io/apiserver"}
	for bin, want := range map[string]string{bin: "patched", pristine: "pristine"} {
		if got, err := Variant(bin, mods); err != nil || got != want {
			t.Errorf("Variant(%s) = %q, %v; want %q", bin, got, err, want)
		}
	}

	checkWithout(t, root, checkout, out, res)
}

// checkWithout builds the checkout --without the carry's second patch: a
// binary of its own name and carry id, linking an overlay of its own under
// .build/ where that patch's files are as the rest of the series leaves them,
// while the repository's go.work still points at .overlay/.
func checkWithout(t *testing.T, root, checkout, out string, whole *Result) {
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Modules[0].Series
	if len(s.Patches) < 2 {
		t.Skip("the carry has one patch")
	}
	left := s.Patches[1]
	num := left.Name[:4]
	goWork := testfs.Read(t, filepath.Join(root, "go.work"))
	// Module-qualified: other modules' patches may have the same number.
	spec := c.Modules[0].Module + "/" + num
	wres, err := Build(context.Background(), Options{Root: root, KCPSource: checkout, OutDir: out, Progress: testWriter{t}, Without: []string{spec}})
	if err != nil {
		t.Fatalf("Build(Without %s) = %v", num, err)
	}
	if diff := cmp.Diff([]string{filepath.Join(out, "kcp-without-"+num)}, wres.Binaries); diff != "" {
		t.Errorf("--without binaries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{c.Modules[0].Module + "/" + left.Name}, wres.Without); diff != "" {
		t.Errorf("Result.Without (-want +got):\n%s", diff)
	}
	if wres.GitVersion == whole.GitVersion || !strings.Contains(wres.GitVersion, "-carry-") {
		t.Errorf("--without gitVersion = %q, the whole carry's %q", wres.GitVersion, whole.GitVersion)
	}
	mod := c.Modules[0].Module
	dir, wholeDir := wres.Overlay[mod], whole.Overlay[mod]
	if dir == wholeDir || !strings.HasPrefix(dir, filepath.Join(root, ".build")+string(os.PathSeparator)) {
		t.Errorf("--without overlay %s, want one of its own under .build/ (the whole carry's: %s)", dir, wholeDir)
	}
	if err := checkOverlayLinked(wres.Binaries[0], wres.Overlay); err != nil {
		t.Error(err)
	}
	changed := left.Files[0].NewName
	if testfs.Read(t, filepath.Join(dir, changed)) == testfs.Read(t, filepath.Join(wholeDir, changed)) {
		t.Errorf("%s is the same with and without %s", changed, left.Name)
	}
	if got := testfs.Read(t, filepath.Join(root, "go.work")); got != goWork {
		t.Errorf("a --without build changed go.work:\n%s", got)
	}
	if _, err := Build(context.Background(), Options{Root: root, KCPSource: checkout, OutDir: out, Pristine: true, Without: []string{spec}}); err == nil || !strings.Contains(err.Error(), "--pristine") {
		t.Errorf("--without with --pristine: %v", err)
	}
}

// A tree without git metadata (an archive) takes its version from
// --kcp-version, or from the tree itself: the release go.mod requires only
// when the tree is that release's module source (kcp main pins the same fork
// and must not claim it), else the commit a `git archive --prefix=kcp-<commit>/`
// directory names; anything else is refused, naming --kcp-version.
func TestSourceVersionWithoutGit(t *testing.T) {
	root := testfs.RepoRoot(t)
	ctx := context.Background()
	b := &builder{opts: Options{Root: root}, log: testWriter{t}}

	// kcp v0.32.3's module source, as go mod download extracts it.
	dl, err := modcache.Fetch(ctx, root, module.Version{Path: kcpModule, Version: "v0.32.3"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.sourceVersionInfo(ctx, dl.Dir); err != nil || v.KCPDescribe != "v0.32.3" {
		t.Errorf("kcp v0.32.3's source: KCPDescribe = %q, %v; want v0.32.3 (its module hash is go.sum's)", v.KCPDescribe, err)
	}

	// Another tree (kcp main, say) in a git archive's directory.
	main := filepath.Join(t.TempDir(), "kcp-dac74f5955f1")
	testfs.WriteTree(t, main, map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n\ngo 1.26\n"})
	v, err := b.sourceVersionInfo(ctx, main)
	if err != nil || v.KCPDescribe != "v0.0.0-dac74f5955f1" || v.GitCommit != "dac74f5955f1" {
		t.Errorf("kcp-dac74f5955f1/: KCPDescribe = %q, GitCommit = %q, %v; want v0.0.0-dac74f5955f1 naming the commit", v.KCPDescribe, v.GitCommit, err)
	}
	if strings.Contains(v.GitVersion(), "v0.32.3") {
		t.Errorf("a build of another tree claims v0.32.3: %s", v.GitVersion())
	}

	b.opts.KCPVersion = "v0.33.0-rc.1"
	if v, err := b.sourceVersionInfo(ctx, main); err != nil || v.KCPDescribe != "v0.33.0-rc.1" {
		t.Errorf("--kcp-version: KCPDescribe = %q, %v; want v0.33.0-rc.1", v.KCPDescribe, err)
	}
	b.opts.KCPVersion = ""

	other := filepath.Join(t.TempDir(), "src")
	testfs.WriteTree(t, other, map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n\ngo 1.26\n"})
	var serr *SourceError
	if _, err := b.sourceVersionInfo(ctx, other); !errors.As(err, &serr) || !strings.Contains(err.Error(), "--kcp-version") || !strings.Contains(err.Error(), "v0.32.3") {
		t.Errorf("an unnamed tree without --kcp-version: err = %v, want a SourceError naming v0.32.3 and --kcp-version", err)
	}
}

// checkGoVersionShowsOverlay checks that every carried module bin links is
// replaced by its overlay, and that it links at least one (a binary need
// not link every carried module: the synthetic checkout has no client-go).
func checkGoVersionShowsOverlay(t *testing.T, bin string, overlay map[string]string) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
	}
	linked := 0
	lines := strings.Split(string(out), "\n")
	for mod, dir := range overlay {
		for i, line := range lines {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "dep" || f[1] != mod {
				continue
			}
			linked++
			if i+1 < len(lines) {
				if next := strings.Fields(lines[i+1]); len(next) >= 2 && next[0] == "=>" && next[1] == dir {
					continue
				}
			}
			t.Errorf("go version -m %s does not show %s replaced by %s:\n%s", bin, mod, dir, out)
		}
	}
	if linked == 0 {
		t.Errorf("go version -m %s shows none of the carried modules %v:\n%s", bin, overlay, out)
	}
}

func runProbe(t *testing.T, bin string) map[string]string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		kv[k] = v
	}
	return kv
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
