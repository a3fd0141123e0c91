package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/rogpeppe/go-internal/goproxytest"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testapiserver"
	"github.com/kcp-carry/kcp-carry/internal/testproxy"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"carry": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script. Each starts
// from the files of testdata/fixture.txtar (a synthetic fork module, a
// project pinning it, and a one-patch carry) plus its own, and talks to a
// local module proxy it starts with mkproxy, so nothing leaves $WORK.
func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Skipf("go command not available: %v", err)
	}
	fixture, err := txtar.ParseFile(filepath.Join("testdata", "fixture.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			for _, f := range fixture.Files {
				p := filepath.Join(env.WorkDir, filepath.FromSlash(f.Name))
				if _, err := os.Stat(p); err == nil {
					continue // the script's own version wins
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					return err
				}
			}
			// The build cache is content-addressed and shared only for
			// speed; modules and checksums stay inside $WORK.
			env.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
			env.Setenv("GOMODCACHE", filepath.Join(env.WorkDir, "modcache"))
			env.Setenv("GOPROXY", "file://"+filepath.ToSlash(filepath.Join(env.WorkDir, "proxy")))
			env.Setenv("GOSUMDB", "off")
			env.Setenv("GONOSUMDB", "*")
			env.Setenv("GOFLAGS", "-modcacherw")
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("GOWORK", "")
			env.Setenv("GIT_AUTHOR_NAME", "Carry Tester")
			env.Setenv("GIT_AUTHOR_EMAIL", "tester@example.com")
			env.Setenv("GIT_AUTHOR_DATE", "@1767225600 +0000")
			env.Setenv("GIT_COMMITTER_NAME", "Carry Tester")
			env.Setenv("GIT_COMMITTER_EMAIL", "tester@example.com")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkproxy": cmdMkproxy,
			"zipedit": cmdZipedit,
			"noglob":  cmdNoglob,
			"mkbase":  cmdMkbase,
			"fakekcp": cmdFakekcp,
		},
	})
}

// mkproxy SRC adds the module trees SRC/<module path>@<version>/ to
// $WORK/proxy and points GOPROXY at a goproxytest server of all it holds. A
// file SRC/<module path>@<version>.info is served as the .info (to give
// Origin data); otherwise one is made up.
func cmdMkproxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkproxy SRC")
	}
	src := ts.MkAbs(args[0])
	proxy := ts.MkAbs("proxy")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.Contains(d.Name(), "@") {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		modPath, version, _ := strings.Cut(filepath.ToSlash(rel), "@")
		info, err := os.ReadFile(path + ".info")
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if _, err := testproxy.Add(proxy, module.Version{Path: modPath, Version: version}, path, info); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return filepath.SkipDir
	})
	ts.Check(err)
	srv, err := goproxytest.NewServer(proxy, "")
	ts.Check(err)
	ts.Defer(srv.Close)
	ts.Setenv("GOPROXY", srv.URL)
}

// zipedit ZIP NAME FILE replaces the file NAME (module-relative) inside a
// module zip with the content of FILE, the way a corrupted or tampered
// module cache would look.
func cmdZipedit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: zipedit ZIP NAME FILE")
	}
	zipPath := ts.MkAbs(args[0])
	content, err := os.ReadFile(ts.MkAbs(args[2]))
	ts.Check(err)
	r, err := zip.OpenReader(zipPath)
	ts.Check(err)
	var out bytes.Buffer
	w := zip.NewWriter(&out)
	found := false
	for _, f := range r.File {
		// Entries are named <module path>@<version>/<file>.
		_, rest, _ := strings.Cut(f.Name, "@")
		_, rel, _ := strings.Cut(rest, "/")
		data := content
		if rel == args[1] {
			found = true
		} else {
			rc, err := f.Open()
			ts.Check(err)
			data, err = io.ReadAll(rc)
			ts.Check(err)
			rc.Close()
		}
		fw, err := w.Create(f.Name)
		ts.Check(err)
		_, err = fw.Write(data)
		ts.Check(err)
	}
	r.Close()
	ts.Check(w.Close())
	if !found {
		ts.Fatalf("%s has no file %s", zipPath, args[1])
	}
	ts.Check(os.Chmod(zipPath, 0o644))
	ts.Check(os.WriteFile(zipPath, out.Bytes(), 0o644))
}

// noglob PATTERN fails if any file matches PATTERN (relative to the
// current directory), for example leftover temporary directories.
func cmdNoglob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: noglob PATTERN")
	}
	matches, err := filepath.Glob(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(matches) > 0 {
		ts.Fatalf("unexpected files: %s", strings.Join(matches, " "))
	}
}

// mkbase DIR FILE OS/ARCH... writes an OCI image layout whose index.json
// holds one index with an image per platform, each with the single file FILE
// (e.g. kcp, or something else for a base that is not kcp's image). The one
// platform "-" writes a single image whose config names no os/architecture,
// as `crane append` without a base makes it.
func cmdMkbase(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: mkbase DIR FILE OS/ARCH...")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	bare := len(args) == 3 && args[2] == "-"
	for _, plat := range args[2:] {
		p := &v1.Platform{}
		var err error
		if !bare {
			p, err = v1.ParsePlatform(plat)
			ts.Check(err)
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		content := []byte("release binary for " + plat)
		ts.Check(tw.WriteHeader(&tar.Header{Name: args[1], Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(content)
		ts.Check(err)
		ts.Check(tw.Close())
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer))
		ts.Check(err)
		cfg, err := img.ConfigFile()
		ts.Check(err)
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = p.OS, p.Architecture
		cfg.Config = v1.Config{Entrypoint: []string{"/kcp"}, Cmd: []string{"start"}, User: "65532:65532"}
		img, err = mutate.ConfigFile(img, cfg)
		ts.Check(err)
		if bare {
			lp, err := layout.Write(ts.MkAbs(args[0]), empty.Index)
			ts.Check(err)
			ts.Check(lp.AppendImage(img))
			return
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	lp, err := layout.Write(ts.MkAbs(args[0]), empty.Index)
	ts.Check(err)
	ts.Check(lp.AppendIndex(idx))
}

// fakekcp GITVERSION [forbid-wildcard] [patch=STATUS] starts a fake shard
// (internal/testapiserver) for the rest of the script, with two ConfigMaps
// that carry kcp.io/original-api-version "" and one another value, and
// writes $WORK/kubeconfig (context "shard") and $WORK/ca.crt for it; $FAKEKCP
// is its URL, for --server (its token is fake-admin).
func cmdFakekcp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: fakekcp GITVERSION [forbid-wildcard] [patch=STATUS]")
	}
	s := testapiserver.New(args[0],
		&testapiserver.Object{Cluster: "root", Namespace: "default", Name: "a", Annotations: map[string]string{testapiserver.Annotation: ""}},
		&testapiserver.Object{Cluster: "root", Namespace: "default", Name: "b", Annotations: map[string]string{testapiserver.Annotation: "v1"}},
		&testapiserver.Object{Cluster: "2xk9", Namespace: "team", Name: "c", Annotations: map[string]string{testapiserver.Annotation: ""}},
	)
	ts.Defer(s.Close)
	for _, a := range args[1:] {
		switch {
		case a == "forbid-wildcard":
			s.ForbidWildcard = true
		case strings.HasPrefix(a, "patch="):
			_, err := fmt.Sscan(strings.TrimPrefix(a, "patch="), &s.PatchStatus)
			ts.Check(err)
		default:
			ts.Fatalf("fakekcp: unknown option %q", a)
		}
	}
	_, err := s.WriteKubeconfig(ts.Getenv("WORK"))
	ts.Check(err)
	ts.Setenv("FAKEKCP", s.URL)
}
