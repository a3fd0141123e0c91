package overlay

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
)

// goWorkPlan is the go.work content carry wants, computed before anything
// is written so that a conflict leaves every file untouched.
type goWorkPlan struct {
	file    *gowork.File
	path    string
	data    []byte
	exists  bool
	changed bool
}

// planGoWork makes go.work use rootDir and replace each carried module with
// its overlay directory, dropping replaces into the overlay of modules no
// longer carried. A replace of a carried module pointing elsewhere, or an
// existing go.work not using rootDir, is a conflict: carry will not guess
// which of the two the user meant.
func planGoWork(workPath, rootDir, overlayDir string, modules []string, goVersion string) (*goWorkPlan, error) {
	wf, err := gowork.Read(workPath)
	if err != nil {
		return nil, err
	}
	rootRel := wf.Rel(rootDir)
	overlayRel := wf.Rel(overlayDir)

	if !wf.Uses(rootRel) {
		if wf.Exists() {
			return nil, fmt.Errorf("%s: no `use %s` line; the workspace must use the repository module for the overlay to apply (add the line or delete go.work)", workPath, rootRel)
		}
		if err := wf.AddUse(rootRel); err != nil {
			return nil, err
		}
	}
	if err := wf.SetGoIfMissing(goVersion); err != nil {
		return nil, err
	}

	want := map[string]string{}
	for _, m := range modules {
		want[m] = overlayRel + "/" + m
	}
	present := map[string]bool{}
	var conflicts []error
	for _, r := range wf.Work.Replace {
		if r.Old.Path == "" {
			continue // dropped below
		}
		if dir, carried := want[r.Old.Path]; carried {
			if r.Old.Version == "" && r.New.Version == "" && path.Clean(r.New.Path) == path.Clean(dir) {
				present[r.Old.Path] = true
				continue
			}
			conflicts = append(conflicts, fmt.Errorf("%s:%d: replace %s conflicts with the overlay, which needs `replace %s => %s`; remove the line (or stop carrying %s)",
				workPath, r.Syntax.Start.Line, pins.Replace{Old: r.Old, New: r.New}, r.Old.Path, dir, r.Old.Path))
			continue
		}
		if r.New.Version == "" && isUnder(r.New.Path, overlayRel) {
			if err := wf.Work.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return nil, err
			}
		}
	}
	if len(conflicts) > 0 {
		return nil, errors.Join(conflicts...)
	}
	for _, m := range modules {
		if !present[m] {
			if err := wf.AddReplace(m, want[m]); err != nil {
				return nil, err
			}
		}
	}
	return &goWorkPlan{file: wf, path: workPath, data: wf.Bytes(), exists: wf.Exists(), changed: wf.Changed()}, nil
}

func isUnder(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+"/")
}
