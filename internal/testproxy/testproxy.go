// Package testproxy writes module versions into a directory laid out as a
// GOPROXY (<path>/@v/{list,<v>.info,<v>.mod,<v>.zip}), so tests can serve
// synthetic modules through GOPROXY=file://<dir> without a network.
package testproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// Add serves the module tree in dir as m from proxy and returns the h1:
// hash of its zip (the go.sum line's hash). info is the .info content; if
// nil, one with the version and a time (the pseudo-version's, if any) is
// made up.
func Add(proxy string, m module.Version, dir string, info []byte) (string, error) {
	if err := module.Check(m.Path, m.Version); err != nil {
		return "", err
	}
	ep, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	ev, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(ep), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	if info == nil {
		t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if pt, err := module.PseudoVersionTime(m.Version); err == nil {
			t = pt
		}
		if info, err = json.Marshal(map[string]any{"Version": m.Version, "Time": t}); err != nil {
			return "", err
		}
	}
	var zbuf bytes.Buffer
	if err := modzip.CreateFromDir(&zbuf, m, dir); err != nil {
		return "", err
	}
	zipPath := filepath.Join(vdir, ev+".zip")
	for name, data := range map[string][]byte{ev + ".mod": gomod, ev + ".info": info, ev + ".zip": zbuf.Bytes()} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	list, err := os.OpenFile(filepath.Join(vdir, "list"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := fmt.Fprintln(list, m.Version); err != nil {
		list.Close()
		return "", err
	}
	if err := list.Close(); err != nil {
		return "", err
	}
	return dirhash.HashZip(zipPath, dirhash.Hash1)
}
